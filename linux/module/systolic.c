// SPDX-License-Identifier: GPL-2.0-only
/*
 * systolic.ko: the Linux driver of the systolic matmul accelerator as a PCI function
 * (SYSTOLIC_PCI_VENDOR:SYSTOLIC_PCI_DEVICE, its register block at BAR0 offset 0).
 *
 * /dev/systolic0 gives DMA buffers through mmap() (one dma_alloc_coherent buffer per mapping) and
 * runs jobs through SYSTOLIC_IOC_RUN, whose operands are addresses inside the caller's mappings:
 * the driver translates them to DMA addresses after checking that every extent lies inside one
 * buffer, programs the job with <systolic/accelerator_driver.h> and sleeps until the interrupt, or
 * polls STATUS. One job runs at a time.
 *
 * Interrupts: under QEMU's TCG the accelerator's own INTx reaches nothing, so the platform adds an
 * ivshmem-doorbell function (1af4:1110) whose MSI-X vector 0 it rings when the accelerator's
 * interrupt line rises. This module binds that function too and takes the accelerator's interrupt
 * from it; without one (or with poll=1) it polls. docs/linux.md describes the whole interface.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/wait.h>

#include <systolic/linux/systolic.h>

#define SYSTOLIC_NAME "systolic"
#define IVSHMEM_VENDOR 0x1af4
#define IVSHMEM_DEVICE 0x1110

static bool poll;
module_param(poll, bool, 0644);
MODULE_PARM_DESC(poll, "Poll STATUS instead of waiting for the interrupt");

static unsigned int job_timeout;
module_param(job_timeout, uint, 0644);
MODULE_PARM_DESC(job_timeout,
		 "Seconds a job may run before it is stopped by soft reset (0: no limit)");

/* How long a soft reset may take to stop a job: it stops at its next step, one K chunk later. */
#define SYSTOLIC_RESET_TIMEOUT_MS 10000
/* Without an interrupt within this slice the waiter looks at STATUS itself. */
#define SYSTOLIC_IRQ_SLICE (HZ / 10)

struct systolic_accel {
	struct kref ref; /* the binding, each open file, each buffer */
	struct pci_dev *pdev;
	void __iomem *regs;
	struct systolic_dev hw; /* <systolic/accelerator_driver.h>'s accessors */
	struct miscdevice misc;
	struct mutex job_lock; /* one job at a time; also guards gone and wedged */
	wait_queue_head_t wq;
	u32 irq_causes; /* IRQ_STATUS bits the interrupt acknowledged; under systolic_lock */
	bool gone; /* unbound: no more jobs or buffers */
	bool wedged; /* a job did not stop on soft reset: no more jobs */
	u32 array_size;
	u32 version;
	u64 jobs_started, jobs_failed, interrupts, jobs_aborted;
};

struct systolic_bell {
	struct pci_dev *pdev;
	int irq;
};

/* One DMA buffer: alive while a mapping of it or a job using it is. */
struct systolic_buf {
	struct kref ref;
	struct systolic_accel *ac;
	void *cpu;
	dma_addr_t dma;
	size_t size;
};

/* Pairs the accelerator with its doorbell and guards irq_causes: taken in the interrupt handler. */
static DEFINE_SPINLOCK(systolic_lock);
static struct systolic_accel *systolic_accel_bound;
static struct systolic_bell *systolic_bell_bound;

static u32 systolic_read32(void *ctx, u32 offset)
{
	struct systolic_accel *ac = ctx;

	return readl(ac->regs + offset);
}

static void systolic_write32(void *ctx, u32 offset, u32 value)
{
	struct systolic_accel *ac = ctx;

	writel(value, ac->regs + offset);
}

static void systolic_accel_release(struct kref *ref)
{
	struct systolic_accel *ac = container_of(ref, struct systolic_accel, ref);

	pci_dev_put(ac->pdev);
	kfree(ac);
}

static void systolic_accel_put(struct systolic_accel *ac)
{
	kref_put(&ac->ref, systolic_accel_release);
}

static void systolic_buf_release(struct kref *ref)
{
	struct systolic_buf *buf = container_of(ref, struct systolic_buf, ref);

	dma_free_coherent(&buf->ac->pdev->dev, buf->size, buf->cpu, buf->dma);
	systolic_accel_put(buf->ac);
	kfree(buf);
}

static void systolic_buf_put(struct systolic_buf *buf)
{
	kref_put(&buf->ref, systolic_buf_release);
}

/* The doorbell's MSI-X vector 0: the accelerator's interrupt line rose. */
static irqreturn_t systolic_bell_irq(int irq, void *data)
{
	struct systolic_accel *ac;
	u32 causes = 0;

	spin_lock(&systolic_lock);
	ac = systolic_accel_bound;
	if (ac) {
		causes = systolic_irq_ack(&ac->hw);
		if (causes) {
			ac->irq_causes |= causes;
			ac->interrupts++;
			wake_up(&ac->wq);
		}
	}
	spin_unlock(&systolic_lock);
	return causes ? IRQ_HANDLED : IRQ_NONE;
}

/* ---- DMA buffers: one per mmap() ---- */

static void systolic_vm_open(struct vm_area_struct *vma)
{
	struct systolic_buf *buf = vma->vm_private_data;

	kref_get(&buf->ref); /* fork: the child's copy of the mapping */
}

static void systolic_vm_close(struct vm_area_struct *vma)
{
	systolic_buf_put(vma->vm_private_data);
}

/* A mapping is one buffer from its start: a partial munmap() or mprotect() would leave a piece
 * whose start is no longer the buffer's. */
static int systolic_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static const struct vm_operations_struct systolic_vm_ops = {
	.open = systolic_vm_open,
	.close = systolic_vm_close,
	.may_split = systolic_vm_may_split,
};

static int systolic_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct systolic_accel *ac = file->private_data;
	size_t size = vma->vm_end - vma->vm_start;
	struct systolic_buf *buf;
	int ret;

	if (vma->vm_pgoff != 0 || size > SYSTOLIC_LINUX_MAX_BUFFER || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (READ_ONCE(ac->gone))
		return -ENODEV;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	buf->size = size;
	buf->cpu = dma_alloc_coherent(&ac->pdev->dev, size, &buf->dma, GFP_KERNEL);
	if (!buf->cpu) {
		kfree(buf);
		return -ENOMEM;
	}
	ret = dma_mmap_coherent(&ac->pdev->dev, vma, buf->cpu, buf->dma, size);
	if (ret) {
		dma_free_coherent(&ac->pdev->dev, size, buf->cpu, buf->dma);
		kfree(buf);
		return ret;
	}
	kref_init(&buf->ref);
	kref_get(&ac->ref);
	buf->ac = ac;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_private_data = buf;
	vma->vm_ops = &systolic_vm_ops;
	return 0;
}

/* ---- Jobs ---- */

/* The buffers a job's addresses lie in, held until the device is done with them. */
struct systolic_held {
	struct systolic_buf *buf[5];
	unsigned int n;
};

static void systolic_held_put(struct systolic_held *held)
{
	while (held->n)
		systolic_buf_put(held->buf[--held->n]);
}

/* Bytes an operand spans: `rows` rows of `cols` elements of `elem` bytes, `stride` bytes apart
 * (0: packed). The larger of stride and row length is taken, so that a stride the device refuses
 * (ERR_STRIDE) cannot make the extent look smaller than what a device might read. */
static int systolic_extent(u32 rows, u32 cols, u32 elem, u32 stride, u64 *len)
{
	u64 row = (u64)cols * elem;
	u64 step = max_t(u64, stride, row);

	if (rows == 0 || cols == 0) {
		*len = 0; /* the device refuses the job (ERR_ZERO_DIM) before any transfer */
		return 0;
	}
	if (check_mul_overflow((u64)(rows - 1), step, len) || check_add_overflow(*len, row, len))
		return -EFAULT;
	return 0;
}

/* The DMA address of [uaddr, uaddr + len) when it lies inside one of this process's mappings of
 * this device's buffers; the buffer is held in *held. */
static int systolic_translate(struct systolic_accel *ac, u64 uaddr, u64 len,
			      struct systolic_held *held, u64 *dma)
{
	struct vm_area_struct *vma;
	struct systolic_buf *buf;
	u64 off;

	if (uaddr > ULONG_MAX)
		return -EFAULT;
	vma = vma_lookup(current->mm, (unsigned long)uaddr);
	if (!vma || vma->vm_ops != &systolic_vm_ops)
		return -EFAULT;
	buf = vma->vm_private_data;
	if (buf->ac != ac)
		return -EFAULT;
	off = uaddr - vma->vm_start;
	if (len > buf->size - off)
		return -EFAULT;
	kref_get(&buf->ref);
	held->buf[held->n++] = buf;
	*dma = buf->dma + off;
	return 0;
}

static u32 systolic_operand_size(u32 dtype)
{
	switch (dtype) {
	case SYSTOLIC_DTYPE_INT8:
		return 1;
	case SYSTOLIC_DTYPE_BF16:
		return 2;
	default: /* int32, fp32; an unknown format (ERR_DTYPE) is bounded by the widest */
		return 4;
	}
}

static u32 systolic_accumulator_size(u32 dtype)
{
	switch (dtype) {
	case SYSTOLIC_DTYPE_INT8:
	case SYSTOLIC_DTYPE_FP32:
	case SYSTOLIC_DTYPE_BF16:
		return 4;
	default: /* int64 for int32; an unknown format is bounded by the widest */
		return 8;
	}
}

static u32 systolic_output_size(u32 out_dtype, u32 acc)
{
	switch (out_dtype) {
	case SYSTOLIC_OUT_DTYPE_INT8:
		return 1;
	case SYSTOLIC_OUT_DTYPE_ACC:
		return acc;
	default: /* an unknown format (ERR_DTYPE) is bounded by the widest */
		return 8;
	}
}

/* Replaces the job's user addresses with DMA addresses; every non-zero address is checked, and
 * A, B and C always. */
static int systolic_map_job(struct systolic_accel *ac, struct systolic_job *job,
			    struct systolic_held *held)
{
	const u32 in = systolic_operand_size(job->dtype);
	const u32 acc = systolic_accumulator_size(job->dtype);
	const u32 out = systolic_output_size(job->out_dtype, acc);
	u64 a_len, b_len, c_len, partial_len, scale_len;
	int ret;

	if (systolic_extent(job->m, job->k, in, job->a_stride, &a_len) ||
	    systolic_extent(job->k, job->p, in, job->b_stride, &b_len) ||
	    systolic_extent(job->m, job->p, out, job->c_stride, &c_len) ||
	    systolic_extent(job->m, job->p, acc, job->partial_stride, &partial_len))
		return -EFAULT;
	scale_len = (u64)job->p * (job->zero_point_vec ? 12 : 8);

	mmap_read_lock(current->mm);
	ret = systolic_translate(ac, job->a_addr, a_len, held, &job->a_addr);
	if (!ret)
		ret = systolic_translate(ac, job->b_addr, b_len, held, &job->b_addr);
	if (!ret)
		ret = systolic_translate(ac, job->c_addr, c_len, held, &job->c_addr);
	if (!ret && job->partial_addr)
		ret = systolic_translate(ac, job->partial_addr, partial_len, held,
					 &job->partial_addr);
	if (!ret && job->scale_vec_addr)
		ret = systolic_translate(ac, job->scale_vec_addr, scale_len, held,
					 &job->scale_vec_addr);
	mmap_read_unlock(current->mm);
	if (ret)
		systolic_held_put(held);
	return ret;
}

static bool systolic_irq_seen(struct systolic_accel *ac)
{
	unsigned long flags;
	bool seen;

	spin_lock_irqsave(&systolic_lock, flags);
	seen = ac->irq_causes != 0;
	spin_unlock_irqrestore(&systolic_lock, flags);
	return seen;
}

/* Acknowledges what is left in IRQ_STATUS and forgets what the handler saw, so that a late
 * interrupt cannot speak for the next job. */
static void systolic_irq_clear(struct systolic_accel *ac)
{
	spin_lock_irq(&systolic_lock);
	systolic_irq_ack(&ac->hw);
	ac->irq_causes = 0;
	spin_unlock_irq(&systolic_lock);
}

/* Until the job has ended (0), the caller is killed (-EINTR) or the time is up (-ETIMEDOUT). With
 * the interrupt the waiter still looks at STATUS every slice, so a lost interrupt costs a slice,
 * not the job. */
static int systolic_wait(struct systolic_accel *ac, bool use_irq)
{
	const unsigned long deadline = jiffies + (unsigned long)job_timeout * HZ;
	unsigned int spins = 0;

	for (;;) {
		if (use_irq) {
			long left = wait_event_killable_timeout(ac->wq, systolic_irq_seen(ac),
								SYSTOLIC_IRQ_SLICE);

			if (left < 0)
				return -EINTR;
			if (!(systolic_status(&ac->hw) & SYSTOLIC_STATUS_BUSY)) {
				if (left == 0)
					dev_warn_once(&ac->pdev->dev,
						      "a job ended without its interrupt\n");
				return 0;
			}
			if (left > 0) { /* a cause but still busy: not this job's */
				spin_lock_irq(&systolic_lock);
				ac->irq_causes = 0;
				spin_unlock_irq(&systolic_lock);
			}
		} else {
			if (!(systolic_status(&ac->hw) & SYSTOLIC_STATUS_BUSY))
				return 0;
			if (fatal_signal_pending(current))
				return -EINTR;
			/* Each read is a round trip to the model: spin a little, then sleep. */
			if (++spins > 16)
				usleep_range(50, 200);
		}
		if (job_timeout && time_after(jiffies, deadline))
			return -ETIMEDOUT;
	}
}

/* Stops a running job by soft reset; false when it would not stop. */
static bool systolic_abort(struct systolic_accel *ac)
{
	unsigned int ms;

	systolic_reset(&ac->hw);
	for (ms = 0; ms < SYSTOLIC_RESET_TIMEOUT_MS; ++ms) {
		if (!(systolic_status(&ac->hw) & SYSTOLIC_STATUS_BUSY))
			return true;
		usleep_range(1000, 1100);
	}
	return false;
}

static int systolic_errno(u32 code)
{
	switch (code) {
	case SYSTOLIC_ERR_NONE:
		return 0;
	case SYSTOLIC_ERR_BUSY:
		return -EBUSY;
	case SYSTOLIC_ERR_RANGE:
		return -ERANGE;
	case SYSTOLIC_ERR_SIZE:
		return -E2BIG;
	case SYSTOLIC_ERR_ZERO_DIM:
	case SYSTOLIC_ERR_DTYPE:
	case SYSTOLIC_ERR_OPTION:
	case SYSTOLIC_ERR_ALIGN:
	case SYSTOLIC_ERR_STRIDE:
	case SYSTOLIC_ERR_OVERLAP:
	case SYSTOLIC_ERR_PARTIAL:
		return -EINVAL;
	default: /* ERR_DMA, ERR_INTERNAL */
		return -EIO;
	}
}

/* Runs one mapped job with job_lock held; fills the result fields of *run. */
static int systolic_run_locked(struct systolic_accel *ac, const struct systolic_job *job,
			       struct systolic_ioc_run *run, struct systolic_held *held)
{
	bool use_irq;
	u32 status;
	int ret;

	if (ac->gone)
		return -ENODEV;
	if (ac->wedged)
		return -EIO;
	spin_lock_irq(&systolic_lock);
	use_irq = !READ_ONCE(poll) && systolic_bell_bound;
	ac->irq_causes = 0;
	spin_unlock_irq(&systolic_lock);

	systolic_program(&ac->hw, job);
	ac->jobs_started++;
	systolic_start(&ac->hw, use_irq);
	ret = systolic_wait(ac, use_irq);
	if (ret) {
		ac->jobs_aborted++;
		ac->jobs_failed++;
		if (!systolic_abort(ac)) {
			/* The device may still write into the job's buffers: keep them for ever. */
			ac->wedged = true;
			held->n = 0;
			dev_err(&ac->pdev->dev, "a job did not stop on soft reset: no more jobs\n");
		} else {
			dev_info(&ac->pdev->dev, "job stopped by soft reset (%s)\n",
				 ret == -EINTR ? "its process was killed" : "timeout");
		}
		systolic_irq_clear(ac);
		return ret;
	}
	status = systolic_status(&ac->hw);
	if (status & SYSTOLIC_STATUS_ERROR) {
		run->error = systolic_error(&ac->hw);
		if (run->error == SYSTOLIC_ERR_DMA)
			run->error_addr = systolic_error_address(&ac->hw);
		ret = systolic_errno(run->error);
		if (!ret)
			ret = -EIO;
	} else if (status & SYSTOLIC_STATUS_DONE) {
		systolic_read_counters(&ac->hw, &run->counters);
		if ((ac->version & 0xffff) >= 4) /* ENERGY: interface 1.4 */
			run->energy = systolic_read_energy(&ac->hw);
	} else {
		dev_warn_ratelimited(&ac->pdev->dev, "job ended with STATUS 0x%x\n", status);
		ret = -EIO;
	}
	if (ret)
		ac->jobs_failed++;
	systolic_irq_clear(ac);
	return ret;
}

static long systolic_ioctl_run(struct systolic_accel *ac, struct systolic_ioc_run __user *arg)
{
	struct systolic_held held = { .n = 0 };
	struct systolic_ioc_run run;
	struct systolic_job job;
	int ret;

	if (copy_from_user(&run, arg, sizeof(run)))
		return -EFAULT;
	if (run.flags || run.reserved[0] || run.reserved[1])
		return -EINVAL;
	job = run.job;
	ret = systolic_map_job(ac, &job, &held);
	if (ret)
		return ret;
	run.error = SYSTOLIC_ERR_NONE;
	run.error_addr = 0;
	memset(&run.counters, 0, sizeof(run.counters));
	run.energy = 0;

	if (mutex_lock_killable(&ac->job_lock)) {
		systolic_held_put(&held);
		return -EINTR;
	}
	ret = systolic_run_locked(ac, &job, &run, &held);
	mutex_unlock(&ac->job_lock);
	systolic_held_put(&held);
	if (ret == -EINTR || ret == -ENODEV)
		return ret;
	if (copy_to_user(arg, &run, sizeof(run)))
		return -EFAULT;
	return ret;
}

static long systolic_ioctl_info(struct systolic_accel *ac, struct systolic_ioc_info __user *arg)
{
	struct systolic_ioc_info info;

	memset(&info, 0, sizeof(info));
	info.version = SYSTOLIC_LINUX_VERSION;
	info.device_version = ac->version;
	info.array_size = ac->array_size;
	spin_lock_irq(&systolic_lock);
	info.irq = !READ_ONCE(poll) && systolic_bell_bound;
	info.interrupts = ac->interrupts;
	spin_unlock_irq(&systolic_lock);
	info.max_buffer = SYSTOLIC_LINUX_MAX_BUFFER;
	info.jobs_started = READ_ONCE(ac->jobs_started);
	info.jobs_failed = READ_ONCE(ac->jobs_failed);
	info.jobs_aborted = READ_ONCE(ac->jobs_aborted);
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long systolic_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct systolic_accel *ac = file->private_data;

	switch (cmd) {
	case SYSTOLIC_IOC_RUN:
		return systolic_ioctl_run(ac, (struct systolic_ioc_run __user *)arg);
	case SYSTOLIC_IOC_INFO:
		return systolic_ioctl_info(ac, (struct systolic_ioc_info __user *)arg);
	default:
		return -ENOTTY;
	}
}

static int systolic_open(struct inode *inode, struct file *file)
{
	/* misc_open() left the miscdevice here; misc_deregister() cannot run meanwhile. */
	struct systolic_accel *ac = container_of(file->private_data, struct systolic_accel, misc);

	kref_get(&ac->ref);
	file->private_data = ac;
	return 0;
}

static int systolic_release(struct inode *inode, struct file *file)
{
	systolic_accel_put(file->private_data);
	return 0;
}

static const struct file_operations systolic_fops = {
	.owner = THIS_MODULE,
	.open = systolic_open,
	.release = systolic_release,
	.mmap = systolic_mmap,
	.unlocked_ioctl = systolic_ioctl,
	.llseek = noop_llseek,
};

/* ---- The accelerator's PCI function ---- */

static int systolic_probe_pci(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct systolic_accel *ac;
	const char *irq_how;
	int ret;

	if (!(pci_resource_flags(pdev, 0) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, 0) < SYSTOLIC_REGS_SIZE) {
		dev_err(&pdev->dev, "BAR0 is not a memory BAR of at least %u bytes\n",
			SYSTOLIC_REGS_SIZE);
		return -ENODEV;
	}
	ac = kzalloc(sizeof(*ac), GFP_KERNEL);
	if (!ac)
		return -ENOMEM;
	kref_init(&ac->ref);
	ac->pdev = pci_dev_get(pdev);
	mutex_init(&ac->job_lock);
	init_waitqueue_head(&ac->wq);
	ac->hw.ctx = ac;
	ac->hw.read32 = systolic_read32;
	ac->hw.write32 = systolic_write32;

	ret = pci_enable_device_mem(pdev);
	if (ret) {
		dev_err(&pdev->dev, "cannot enable the device (%d)\n", ret);
		goto err_put;
	}
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA mask (%d)\n", ret);
		goto err_disable;
	}
	/* Only the register block is mapped and BAR0 is not requested: the rest of BAR0 belongs to
	 * the platform (a test-exit register that its init writes through resource0, which
	 * IO_STRICT_DEVMEM would refuse while a driver held the BAR busy). */
	ac->regs = pci_iomap(pdev, 0, SYSTOLIC_REGS_SIZE);
	if (!ac->regs) {
		dev_err(&pdev->dev, "cannot map BAR0\n");
		ret = -ENOMEM;
		goto err_disable;
	}
	if (systolic_probe(&ac->hw, &ac->array_size) != 0) {
		dev_err(&pdev->dev, "no systolic accelerator at BAR0 (ID 0x%08x, VERSION 0x%08x)\n",
			systolic_read32(ac, SYSTOLIC_REG_ID),
			systolic_read32(ac, SYSTOLIC_REG_VERSION));
		ret = -ENODEV;
		goto err_unmap;
	}
	ac->version = systolic_read32(ac, SYSTOLIC_REG_VERSION);
	/* A job of an earlier driver (or of a killed one) must not run on into our buffers. */
	if (systolic_status(&ac->hw) & SYSTOLIC_STATUS_BUSY && !systolic_abort(ac)) {
		dev_err(&pdev->dev, "a running job did not stop on soft reset\n");
		ret = -EIO;
		goto err_unmap;
	}
	systolic_irq_ack(&ac->hw);
	pci_set_master(pdev);
	pci_set_drvdata(pdev, ac);

	spin_lock_irq(&systolic_lock);
	if (systolic_accel_bound) {
		spin_unlock_irq(&systolic_lock);
		dev_err(&pdev->dev, "only one accelerator is supported; %s has /dev/systolic0\n",
			pci_name(systolic_accel_bound->pdev));
		ret = -EBUSY;
		goto err_master;
	}
	systolic_accel_bound = ac;
	if (poll)
		irq_how = "jobs are polled (poll=1)";
	else if (systolic_bell_bound)
		irq_how = "jobs end on the interrupt (MSI-X vector 0 of the ivshmem-doorbell)";
	else
		irq_how = "jobs are polled (no ivshmem-doorbell 1af4:1110 to bring the interrupt)";
	spin_unlock_irq(&systolic_lock);

	ac->misc.minor = MISC_DYNAMIC_MINOR;
	ac->misc.name = SYSTOLIC_NAME "0";
	ac->misc.fops = &systolic_fops;
	ac->misc.parent = &pdev->dev;
	ret = misc_register(&ac->misc);
	if (ret) {
		dev_err(&pdev->dev, "cannot register /dev/%s (%d)\n", ac->misc.name, ret);
		goto err_unbind;
	}
	dev_info(&pdev->dev, "%ux%u array, interface %u.%u, /dev/%s; %s\n", ac->array_size,
		 ac->array_size, ac->version >> 16, ac->version & 0xffff, ac->misc.name, irq_how);
	return 0;

err_unbind:
	spin_lock_irq(&systolic_lock);
	systolic_accel_bound = NULL;
	spin_unlock_irq(&systolic_lock);
err_master:
	pci_clear_master(pdev);
err_unmap:
	pci_iounmap(pdev, ac->regs);
err_disable:
	pci_disable_device(pdev);
err_put:
	systolic_accel_put(ac);
	return ret;
}

static void systolic_remove_pci(struct pci_dev *pdev)
{
	struct systolic_accel *ac = pci_get_drvdata(pdev);

	misc_deregister(&ac->misc);
	/* Waits for a running job; later ioctls and mmaps of open files see gone. */
	mutex_lock(&ac->job_lock);
	WRITE_ONCE(ac->gone, true);
	mutex_unlock(&ac->job_lock);
	spin_lock_irq(&systolic_lock);
	systolic_accel_bound = NULL; /* the interrupt handler no longer touches the registers */
	spin_unlock_irq(&systolic_lock);
	systolic_write32(ac, SYSTOLIC_REG_CTRL, 0);
	pci_clear_master(pdev);
	pci_iounmap(pdev, ac->regs);
	pci_disable_device(pdev);
	/* Buffers still mapped keep ac (and their DMA memory) until they are unmapped. */
	systolic_accel_put(ac);
}

/* clang-format off */
static const struct pci_device_id systolic_ids[] = {
	{ PCI_DEVICE(SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE) },
	{}
};
/* clang-format on */

static struct pci_driver systolic_driver = {
	.name = SYSTOLIC_NAME,
	.id_table = systolic_ids,
	.probe = systolic_probe_pci,
	.remove = systolic_remove_pci,
};

/* ---- The ivshmem-doorbell function: the accelerator's interrupt under TCG ---- */

static int systolic_bell_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct systolic_bell *bell;
	int ret;

	bell = kzalloc(sizeof(*bell), GFP_KERNEL);
	if (!bell)
		return -ENOMEM;
	bell->pdev = pdev;
	ret = pci_enable_device(pdev);
	if (ret) {
		dev_err(&pdev->dev, "cannot enable the doorbell (%d)\n", ret);
		goto err_free;
	}
	/* MSI-X messages are memory writes of the function: bus mastering must be on. */
	pci_set_master(pdev);
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_info(&pdev->dev,
			 "ivshmem without MSI-X: not a doorbell, not the accelerator's\n");
		ret = -ENODEV;
		goto err_disable;
	}
	bell->irq = pci_irq_vector(pdev, 0);
	ret = request_irq(bell->irq, systolic_bell_irq, 0, SYSTOLIC_NAME "-doorbell", bell);
	if (ret) {
		dev_err(&pdev->dev, "cannot request irq %d (%d)\n", bell->irq, ret);
		goto err_vectors;
	}
	spin_lock_irq(&systolic_lock);
	if (systolic_bell_bound) {
		spin_unlock_irq(&systolic_lock);
		dev_info(&pdev->dev, "a second ivshmem-doorbell: %s already brings the interrupt\n",
			 pci_name(systolic_bell_bound->pdev));
		ret = -EBUSY;
		goto err_irq;
	}
	systolic_bell_bound = bell;
	spin_unlock_irq(&systolic_lock);
	pci_set_drvdata(pdev, bell);
	dev_info(&pdev->dev, "the accelerator's interrupt arrives as MSI-X vector 0 (irq %d)\n",
		 bell->irq);
	return 0;

err_irq:
	free_irq(bell->irq, bell);
err_vectors:
	pci_free_irq_vectors(pdev);
err_disable:
	pci_clear_master(pdev);
	pci_disable_device(pdev);
err_free:
	kfree(bell);
	return ret;
}

static void systolic_bell_remove(struct pci_dev *pdev)
{
	struct systolic_bell *bell = pci_get_drvdata(pdev);

	/* A job waiting for the interrupt now finds its end in STATUS, a slice later. */
	spin_lock_irq(&systolic_lock);
	systolic_bell_bound = NULL;
	spin_unlock_irq(&systolic_lock);
	free_irq(bell->irq, bell);
	pci_free_irq_vectors(pdev);
	pci_clear_master(pdev);
	pci_disable_device(pdev);
	kfree(bell);
}

/* clang-format off */
static const struct pci_device_id systolic_bell_ids[] = {
	{ PCI_DEVICE(IVSHMEM_VENDOR, IVSHMEM_DEVICE) },
	{}
};
/* clang-format on */

static struct pci_driver systolic_bell_driver = {
	.name = SYSTOLIC_NAME "-doorbell",
	.id_table = systolic_bell_ids,
	.probe = systolic_bell_probe,
	.remove = systolic_bell_remove,
};

static int __init systolic_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct systolic_ioc_run) != SYSTOLIC_IOC_RUN_SIZE);
	BUILD_BUG_ON(sizeof(struct systolic_ioc_info) != SYSTOLIC_IOC_INFO_SIZE);
	/* The doorbell first, so that the accelerator's probe knows how its jobs will wait. */
	ret = pci_register_driver(&systolic_bell_driver);
	if (ret)
		return ret;
	ret = pci_register_driver(&systolic_driver);
	if (ret)
		pci_unregister_driver(&systolic_bell_driver);
	return ret;
}

static void __exit systolic_exit(void)
{
	pci_unregister_driver(&systolic_driver);
	pci_unregister_driver(&systolic_bell_driver);
}

module_init(systolic_init);
module_exit(systolic_exit);

MODULE_DESCRIPTION("Systolic matmul accelerator (PCI 1234:5157), with ivshmem-doorbell interrupts");
MODULE_LICENSE("GPL");
MODULE_DEVICE_TABLE(pci, systolic_ids);
