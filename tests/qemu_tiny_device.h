/* The tiny device of the QEMU PCI component's boot test (qemu_pci_boot_test.cpp): its PCI IDs and
   register map, for the test's SystemC model and the guest program that drives it
   (qemu_guest_probe.c) alike. */
#ifndef QEMU_TINY_DEVICE_H
#define QEMU_TINY_DEVICE_H

#define TINY_VENDOR 0x1234u /* the unofficial vendor ID of QEMU's own example devices (edu is 1234:11e8) */
#define TINY_DEVICE 0x7e57u
#define TINY_ID_VALUE 0x51570001u

#define TINY_ID 0x00      /* RO: TINY_ID_VALUE */
#define TINY_SCRATCH 0x04 /* RW */
#define TINY_EXIT 0x08    /* W: the guest's verdict, 0 when every check passed */
#define TINY_DMA_LO 0x10  /* RW: a guest-physical address */
#define TINY_DMA_HI 0x14
#define TINY_GO 0x18     /* W: copies 64 bytes from DMA to DMA + 64, each plus one */
#define TINY_STATUS 0x1c /* RO: 0 idle, 1 done, 2 the DMA failed */
#define TINY_SIZE 0x20

#define TINY_DMA_BYTES 64

#endif
