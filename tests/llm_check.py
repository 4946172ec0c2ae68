#!/usr/bin/python3
"""systolic.llm on small decoders (docs/llm.md). One check per run, each well under a minute:

  llm_check.py fp32       2 x 64 x 4 heads: tokens and logits against plain PyTorch, every step
  llm_check.py gqa        the same with 2 KV heads (grouped-query attention), on a 4x8 array
  llm_check.py engines    the cycle engine counts what the functional one models, same tokens
  llm_check.py int8       int8, logits bit for bit against numpy's integer GEMMs, and GQA
  llm_check.py kv_bytes   kv_bytes counted = 2 layers d_model context bytes (x kv/heads), each step
  llm_check.py json       the report survives JSON; the command writes it atomically, exit 0/2
  llm_check.py usage      bad arguments are UsageError before anything runs; the command exits 2
  llm_check.py fault      a stale KV cache (the newest entry replaced by the one before) is caught,
                          and the clean run around it passes
  llm_check.py state_dict weights saved with torch.save and loaded give the seeded run's tokens

Needs PYTHONPATH with the built package (build/python). Exit 0 on pass, 1 on failure.
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout

import torch

import systolic
import systolic.llm as llm

TINY = dict(layers=2, d_model=64, heads=4, vocab=512, context=64)
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def run(**kw):
    args = dict(TINY, prompt=6, new_tokens=4, array=8, seed=3)
    args.update(kw)
    t0 = time.time()
    r = llm.generate(**args)
    print("  (%s %s: %.1f s, %d GEMMs)" % (args.get("dtype", "fp32"), args.get("kv_heads"),
                                          time.time() - t0,
                                          sum(p["gemms"] for p in r["phases"].values())))
    return r


def gemms_expected(cfg_layers, kv_heads, steps):
    """Per step: layers x (QKV, the KV heads' Q.K^T and P.V, the output projection, two MLP
    linears) + the LM head."""
    return steps * (cfg_layers * (4 + 2 * kv_heads) + 1)


def fp32(kv_heads=None, array=8):
    r = run(kv_heads=kv_heads, array=array)
    c = r["check"]
    check(c["passed"] and c["tokens_equal"], "fp32%s: tokens %s equal PyTorch's %s" % (
        "" if kv_heads is None else " GQA", r["tokens"], c["reference_tokens"]))
    check(c["max_rel_logit_error"] <= llm.FP32_LOGIT_REL,
          "fp32: logits within %.0e of PyTorch's (normwise %.2e, max abs %.2e)"
          % (llm.FP32_LOGIT_REL, c["max_rel_logit_error"], c["max_abs_logit_error"]))
    lo, hi = c["reference_logit_range"]
    check(hi - lo > 0.1, "the reference's logits are not degenerate (range %.3g..%.3g)" % (lo, hi))
    total = r["phases"]["prefill"]["gemms"] + r["phases"]["decode"]["gemms"]
    check(c["gemms_bound_checked"] == total and c["gemm_bound_worst"] <= 1.0,
          "every fp32 GEMM (%d) within the summation bound (worst %.3g of it)"
          % (c["gemms_bound_checked"], c["gemm_bound_worst"]))
    n = gemms_expected(TINY["layers"], kv_heads or TINY["heads"], 4)
    check(c["gemms_bound_checked"] == n, "every GEMM ran on the model: %d = %d"
          % (c["gemms_bound_checked"], n))
    # The steps are the ones asked for: the prefill of the prompt, then one token each.
    check([s["phase"] for s in r["steps"]] == ["prefill"] + ["decode"] * 3
          and [s["context"] for s in r["steps"]] == [6, 7, 8, 9],
          "one prefill of 6 tokens, then decode steps at contexts 7, 8, 9")


def engines():
    """The cycle engine (the PEs stepped) counts what the functional engine models, and computes
    the same tokens."""
    a = run(kv_heads=2, array=(4, 8), new_tokens=3, engine="cycle")
    b = run(kv_heads=2, array=(4, 8), new_tokens=3)
    for key in ("advance_edges", "macs_real", "macs_padded", "cycles", "stall_cycles",
                "kv_bytes"):
        check([s[key] for s in a["steps"]] == [s[key] for s in b["steps"]],
              "cycle and functional engines: the same %s per step %s"
              % (key, [s[key] for s in a["steps"]]))
    check(a["tokens"] == b["tokens"] and a["check"]["passed"],
          "cycle engine: the same tokens, checked against PyTorch")


def int8():
    for kv in (None, 2):
        r = run(dtype="int8", kv_heads=kv)
        c = r["check"]
        check(c["passed"] and c["logits_identical"] and c["max_abs_logit_error"] == 0.0,
              "int8%s: every step's logits bit for bit the quantized reference's"
              % ("" if kv is None else " GQA"))
        check(c["tokens_equal"] and r["tokens"] == c["reference_tokens"],
              "int8: tokens %s equal the reference's" % r["tokens"])
        check(c["fp32_max_abs_logit_error"] > 0,
              "int8 is not fp32 in disguise (differs from fp32 by %.3g)"
              % c["fp32_max_abs_logit_error"])


def kv_bytes():
    for dtype, kv, array in (("fp32", None, 8), ("bf16", 2, (4, 8)), ("int8", 1, 16)):
        r = run(dtype=dtype, kv_heads=kv, array=array, new_tokens=5, check=False)
        heads = TINY["heads"]
        kvh = kv or heads
        for s in r["steps"]:
            formula = 2 * TINY["layers"] * TINY["d_model"] * s["context"] * \
                llm.ELEMENT_BYTES[dtype] * kvh // heads
            ok = s["kv_bytes"] == formula
            if s["phase"] == "decode" or not ok:
                check(ok, "%s kv_heads %d, %s step %d, context %d: kv_bytes %d counted, "
                      "formula %d" % (dtype, kvh, s["phase"], s["step"], s["context"],
                                      s["kv_bytes"], formula))
            check(s["kv_bytes"] == s["by_kind"]["qk"]["dram_bytes"]["b"]
                  + s["by_kind"]["pv"]["dram_bytes"]["b"], "  kv_bytes is Q.K^T's and P.V's "
                  "operand-B DRAM bytes") if s["step"] == 1 else None
    # The rest of a decode step's traffic: the weights, read once per token.
    s = r["steps"][-1]
    check(s["weight_bytes"] > s["kv_bytes"], "int8 decode step: weights %d bytes > KV %d bytes"
          % (s["weight_bytes"], s["kv_bytes"]))


def json_roundtrip():
    r = run(new_tokens=3, kv_heads=2)
    text = json.dumps(r)
    check(json.loads(text) == r, "the report round-trips through JSON (%d bytes)" % len(text))
    keys = {"model", "array", "dtype", "engine", "memory", "clock_ghz", "prompt", "tokens",
            "phases", "steps", "ttft_us", "tpot_us", "check"}
    check(keys <= set(r), "the report has %s" % ", ".join(sorted(keys)))
    step_keys = {"phase", "step", "position", "tokens_in", "context", "token", "gemms", "tiles",
                 "advance_edges", "macs_real", "macs_padded", "utilization", "cycles",
                 "stall_cycles", "prefetch_cycles", "dram_bytes", "kv_bytes", "weight_bytes",
                 "time_us", "by_kind"}
    check(all(step_keys <= set(s) for s in r["steps"]), "every step has " + ", ".join(
        sorted(step_keys)))
    check(r["ttft_us"] == r["steps"][0]["cycles"] / 1e3 and r["tpot_us"] == sum(
        s["cycles"] for s in r["steps"][1:]) / 2 / 1e3, "TTFT and TPOT are the steps' cycles "
        "at 1 GHz")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        cmd = [sys.executable, "-m", "systolic.llm", "--layers", "2", "--d-model", "64",
               "--heads", "4", "--kv-heads", "2", "--vocab", "512", "--context", "64",
               "--prompt", "6", "--new-tokens", "3", "--array", "8", "--seed", "3", "--quiet",
               "--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "systolic-generate exits 0 (%s)" % p.stderr.strip()[-200:])
        with open(out) as f:
            got = json.load(f)
        check(got["tokens"] == r["tokens"] and got["steps"][1]["cycles"] == r["steps"][1]["cycles"],
              "the command's --json has the same tokens and cycles as generate()'s")
        check(os.listdir(d) == ["r.json"], "no temporary file left beside it")
        p = subprocess.run(cmd[:-1] + [os.path.join(d, "no", "r.json")], capture_output=True,
                           text=True)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
              "--json into a missing directory: exit 2, one line: %s" % p.stderr.strip())
    # docs/llm.md's example of the command prints what it says.
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "llm.md")
    with open(doc) as f:
        text = f.read()
    command = text.split("/usr/bin/python3 -m systolic.llm", 1)[1].split("\n```", 1)[0]
    shown = text.split("```text\n", 1)[1].split("```", 1)[0].strip()
    argv = command.replace("\\\n", " ").split()
    p = subprocess.run([sys.executable, "-m", "systolic.llm"] + argv, capture_output=True,
                       text=True)
    check(p.returncode == 0 and p.stdout.strip() == shown,
          "docs/llm.md's command prints what the page shows%s" % (
              "" if p.stdout.strip() == shown else ":\n" + p.stdout + p.stderr))


def usage():
    bad = [dict(dtype="int4"), dict(engine="fast"), dict(heads=5), dict(kv_heads=3),
           dict(prompt=0), dict(prompt=[1, 9999]), dict(prompt=60, new_tokens=10),
           dict(new_tokens=0), dict(array=0), dict(buffers="triple"), dict(dram_bandwidth=-1),
           dict(dataflow="xy"), dict(no_such_option=1), dict(clock_ghz=0),
           dict(state_dict="/nonexistent.pt")]
    for kw in bad:
        t0 = time.time()
        try:
            run(**kw)
            check(False, "%s is refused" % kw)
        except systolic.UsageError as e:
            check(isinstance(e, ValueError) and time.time() - t0 < 5,
                  "%s: UsageError: %s" % (kw, e))
    for argv in (["--dtype", "int4"], ["--layers", "x"], ["--array", "3y"], ["--bogus"],
                 ["--prompt", "1,2,oops"]):
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            status = llm.main(argv + ["--quiet"])
        lines = err.getvalue().strip().splitlines()
        check(status == 2 and len(lines) == 1 and lines[0].startswith("systolic-generate: "),
              "systolic-generate %s: exit %d, %s" % (" ".join(argv), status, lines))


def fault():
    """Clean, then a stale cache (each layer's newest K and V replaced by the entries before),
    then clean again: the faulty run must fail the fp32 check, the clean ones pass."""
    clean = run(new_tokens=3)
    check(clean["check"]["passed"], "clean run passes")
    original = llm._Decoder.append

    def stale(self, i, k, v):
        K, V = original(self, i, k, v)
        if K.shape[0] > 1:
            K = torch.cat([K[:-1], K[-2:-1]])
            V = torch.cat([V[:-1], V[-2:-1]])
        return K, V

    llm._Decoder.append = stale
    try:
        run(new_tokens=3)
        check(False, "a stale KV cache is caught")
    except systolic.CheckError as e:
        check("steps" in e.report and not e.report["check"]["passed"],
              "a stale KV cache is caught: %s" % e)
    finally:
        llm._Decoder.append = original
    again = run(new_tokens=3)
    check(again["check"]["passed"] and again["tokens"] == clean["tokens"], "clean again passes")


def state_dict():
    cfg = llm.Config(TINY["layers"], TINY["d_model"], TINY["heads"], 2, TINY["vocab"],
                     TINY["context"])
    w = llm.init_weights(cfg, 11)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "w.pt")
        # Hugging Face's names: the transformer. prefix, the tied head, the mask buffers.
        sd = {"transformer." + k: v for k, v in w.items()}
        sd["lm_head.weight"] = w["wte.weight"]
        sd["transformer.h.0.attn.bias"] = torch.ones(1, 1, 64, 64)
        torch.save(sd, path)
        a = run(kv_heads=2, seed=11, new_tokens=3)
        b = run(kv_heads=2, seed=11, new_tokens=3, layers=None, d_model=None, vocab=None,
                context=None, state_dict=path)
        check(a["tokens"] == b["tokens"] and b["check"]["passed"],
              "the state_dict file gives the seeded weights' tokens %s" % b["tokens"])
        sd["transformer.h.1.mlp.c_fc.weight"] = torch.zeros(3, 3)
        torch.save(sd, path)
        try:
            run(kv_heads=2, layers=None, d_model=None, vocab=None, context=None, state_dict=path)
            check(False, "a wrong shape in the state_dict is refused")
        except systolic.UsageError as e:
            check("c_fc" in str(e), "a wrong shape in the state_dict is refused: %s" % e)


CHECKS = {"fp32": lambda: fp32(), "gqa": lambda: fp32(kv_heads=2, array=(4, 8)), "int8": int8,
          "engines": engines,
          "kv_bytes": kv_bytes, "json": json_roundtrip, "usage": usage, "fault": fault,
          "state_dict": state_dict}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CHECKS:
        sys.exit("usage: llm_check.py " + "|".join(CHECKS))
    torch.set_num_threads(1)
    CHECKS[sys.argv[1]]()
    print("FAIL: %d" % len(failures) if failures else "PASS")
    sys.exit(1 if failures else 0)
