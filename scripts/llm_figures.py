#!/usr/bin/python3
"""GPT-2 small on the systolic model: the figures and the picture of docs/llm.md.

    PYTHONPATH=build/python scripts/llm_figures.py [--png docs/llm-decode.png] [--json FILE]
    PYTHONPATH=build/python scripts/llm_figures.py --check docs/llm.md

Runs systolic.llm.generate on GPT-2 small (seeded weights, fp32, functional engine, double
buffering, 64 bytes per cycle of DRAM, 1 GHz) with a prompt of 128 tokens and 33 new tokens (the
prefill and 32 decode steps) on a 32x32 and a 128x128 array, then single decode steps at other
context lengths (the cache filled by the same decoder on the host, the step itself on the model;
at 64 bytes per cycle and with unlimited bandwidth), and prints the Markdown table docs/llm.md
quotes between its "llm_figures" markers. --png draws cycles per decode token against context.
--check FILE recomputes the table and compares it, figure for figure, with FILE's (exactly: the
model is deterministic; only the wall-time row is not compared); exit 1 when they differ, 2 for
bad usage. Takes about 4 minutes on two shared cores. --redraw JSON prints and draws from the
--json of an earlier run, without running anything (with --check: compares that run's table).
"""

import argparse
import json
import sys
import time

import torch

import systolic.llm as llm

BEGIN = ("<!-- llm_figures: begin (scripts/llm_figures.py writes this table; "
         "--check compares it) -->")
END = "<!-- llm_figures: end -->"
ARRAYS = (32, 128)
PROMPT = 128
NEW_TOKENS = 33  # the prefill's token and 32 decode steps
BANDWIDTH = 64.0
CONTEXTS = (16, 256, 512, 1024)
SEED = 0
UNCHECKED = ("wall time",)


def full_runs(log):
    runs = {}
    for array in ARRAYS:
        t0 = time.time()
        runs[array] = llm.generate(prompt=PROMPT, new_tokens=NEW_TOKENS, array=array, seed=SEED,
                                   dram_bandwidth=BANDWIDTH)
        runs[array]["wall_seconds"] = time.time() - t0
        log("array %d: %.0f s, %s" % (array, runs[array]["wall_seconds"],
                                      llm.summary(runs[array]).splitlines()[0]))
    return runs


def sweep(log):
    """Cycles of one decode step at each context, per array and bandwidth: the cache of
    context - 1 positions filled on the host (plain fp32 GEMMs), the step on the model."""
    cfg = llm.Config(**llm.GPT2_SMALL)
    w = llm.init_weights(cfg, SEED)
    g = torch.Generator().manual_seed(SEED + 1)
    tokens = [int(t) for t in torch.randint(0, cfg.vocab, (max(CONTEXTS),), generator=g)]
    host = llm._Decoder(cfg, w, llm._HostRunner(), False)
    with torch.no_grad():
        host.forward(tokens[:max(CONTEXTS) - 1])
    out = []
    for array in ARRAYS:
        for bw in (BANDWIDTH, None):
            opts = {"buffers": "double", "dram_bandwidth": "inf" if bw is None else repr(bw)}
            for c in CONTEXTS:
                runner = llm._ModelRunner(array, "fp32", "functional", opts, False)
                dec = llm._Decoder(cfg, w, runner, False)
                dec.k = [k[:c - 1] for k in host.k]
                dec.v = [v[:c - 1] for v in host.v]
                dec._float = host._float  # the weights' float32 copies, shared
                with torch.no_grad():
                    dec.forward([tokens[c - 1]])
                t = runner.tally
                kv = sum(t.by_kind[k]["dram_b"] for k in ("qk", "pv"))
                out.append({"array": array, "dram_bandwidth": bw, "context": c,
                            "cycles": t.total["cycles"], "kv_bytes": kv,
                            "dram_bytes": t.total["dram_a"] + t.total["dram_b"] + t.total["dram_c"],
                            "utilization": t.total["macs_real"] / t.total["macs_padded"]})
                log("sweep: array %d, bandwidth %s, context %d: %d cycles"
                    % (array, bw, c, t.total["cycles"]))
    return out


def _ms(cycles):
    return "%.3f ms" % (cycles / 1e6)  # at 1 GHz


def table(runs, points):
    rows = [("", ["%d × %d" % (a, a) for a in ARRAYS])]

    def row(name, f):
        rows.append((name, [f(runs[a]) for a in ARRAYS]))

    pre = lambda r: r["phases"]["prefill"]
    dec = lambda r: r["phases"]["decode"]
    row("prefill of 128 tokens: cycles", lambda r: "{:,}".format(pre(r)["cycles"]))
    row("time to first token", lambda r: "%.3f ms" % (r["ttft_us"] / 1e3))
    row("prefill: utilization", lambda r: "%.2f%%" % (100 * pre(r)["utilization"]))
    row("prefill: stall cycles", lambda r: "{:,}".format(pre(r)["stall_cycles"]))
    row("prefill: DRAM bytes", lambda r: "{:,}".format(pre(r)["dram_bytes"]["total"]))
    row("decode, 32 steps: cycles", lambda r: "{:,}".format(dec(r)["cycles"]))
    row("time per output token (mean)", lambda r: "%.3f ms" % (r["tpot_us"] / 1e3))
    row("decode: utilization", lambda r: "%.2f%%" % (100 * dec(r)["utilization"]))
    row("decode: stall cycles per token (mean)",
        lambda r: "{:,}".format(round(dec(r)["stall_cycles"] / dec(r)["steps"])))
    row("decode: DRAM bytes per token (mean)",
        lambda r: "{:,}".format(round(dec(r)["dram_bytes"]["total"] / dec(r)["steps"])))
    row("decode: weight bytes per token", lambda r: "{:,}".format(r["steps"][1]["weight_bytes"]))
    row("decode: KV bytes, first and last step (context 129, 160)",
        lambda r: "{:,} / {:,}".format(r["steps"][1]["kv_bytes"], r["steps"][-1]["kv_bytes"]))
    row("decode: DRAM bytes / cycles (B/cycle)",
        lambda r: "%.2f" % (dec(r)["dram_bytes"]["total"] / dec(r)["cycles"]))
    row("tokens equal PyTorch's; max \\|Δlogit\\|",
        lambda r: "%s; %.2e" % ("yes" if r["check"]["tokens_equal"] else "NO",
                                r["check"]["max_abs_logit_error"]))
    for bw in (BANDWIDTH, None):
        for c in CONTEXTS:
            rows.append(("one decode step at context %d, %s: cycles"
                         % (c, "64 B/cycle" if bw else "unlimited bandwidth"),
                         ["{:,}".format(p["cycles"]) for a in ARRAYS for p in points
                          if p["array"] == a and p["context"] == c and p["dram_bandwidth"] == bw]))
    row("wall time of the run (prefill + 32 steps, checks included)",
        lambda r: "%.0f s" % r["wall_seconds"])
    lines = ["| " + " | ".join([name] + cells) + " |" for name, cells in rows]
    lines.insert(1, "|---|" + "---:|" * len(ARRAYS))
    return "\n".join(lines)


def draw(points, runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5), dpi=110)
    for array, color in zip(ARRAYS, ("tab:blue", "tab:red")):
        for bw, style in ((BANDWIDTH, "-"), (None, "--")):
            ps = [p for p in points if p["array"] == array and p["dram_bandwidth"] == bw]
            ax.plot([p["context"] for p in ps], [p["cycles"] / 1e6 for p in ps], style, marker="o",
                    color=color, label="%d×%d, %s" % (array, array, "64 B/cycle" if bw else
                                                       "unlimited bandwidth"))
        r = runs[array]
        ax.plot([s["context"] for s in r["steps"][1:]], [s["cycles"] / 1e6 for s in r["steps"][1:]],
                ".", color=color, markersize=3)
    ax.set_xlabel("context (tokens in the KV cache)")
    ax.set_ylabel("cycles per decode token (millions)")
    ax.set_title("GPT-2 small, fp32, decode on the systolic model (double buffering)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.plot([], [], ".", color="gray", label="the 32 decode steps of the full runs")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, metadata={"Description": "cycles per decode token against context, "
                                "GPT-2 small, arrays %s" % ", ".join(map(str, ARRAYS))})


def quoted(path):
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise ValueError("%s has no %s ... %s block" % (path, BEGIN, END))
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", metavar="DOC", help="compare DOC's table with a fresh one")
    p.add_argument("--png", help="draw the picture here")
    p.add_argument("--json", help="write the runs and the sweep here")
    p.add_argument("--redraw", metavar="JSON", help="no runs: print the table and draw the "
                   "picture from the --json of an earlier run")
    args = p.parse_args(argv)
    if args.check:
        try:
            want = quoted(args.check)
        except (OSError, ValueError) as e:
            sys.stderr.write("llm_figures: %s\n" % e)
            return 2
    torch.set_num_threads(1)
    log = lambda s: print(s, file=sys.stderr, flush=True)
    if args.redraw:
        with open(args.redraw) as f:
            saved = json.load(f)
        runs = {int(a): r for a, r in saved["runs"].items()}
        points = saved["sweep"]
    else:
        t0 = time.time()
        runs = full_runs(log)
        points = sweep(log)
        log("%.0f s in all" % (time.time() - t0))
    got = table(runs, points)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": {str(a): r for a, r in runs.items()}, "sweep": points}, f, indent=1)
    if args.png:
        draw(points, runs, args.png)
    if not args.check:
        print(BEGIN + "\n" + got + "\n" + END)
        return 0
    bad = compared = 0
    want_rows = {l.split("|")[1].strip(): l for l in want.splitlines()}
    for line in got.splitlines():
        name = line.split("|")[1].strip()
        if name.startswith(UNCHECKED):
            continue
        compared += 1
        if want_rows.get(name) != line:
            bad += 1
            print("differs: %s\n   docs: %s" % (line, want_rows.get(name, "(missing)")))
    print("%d rows compared with %s, %d differ" % (compared, args.check, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
