#!/usr/bin/env python3
"""torch_tiering.py — PyTorch under libtiermem.so, unmodified, on a GPU (tests/gpu/run.sh).

A transformers Llama built from a config with random bf16 weights (about 8 GB, seeded)
decodes greedily from one seeded prompt, each run a fresh process:

  uncapped     plain PyTorch, the whole model in HBM: the reference tokens and speed
  heat, size   under libtiermem.so with TIERMEM_HBM_LIMIT at 60% of the weights, each policy
  accelerate   what a PyTorch user picks instead: from_pretrained(device_map="auto") with
               max_memory holding the same bytes on the GPU, the rest offloaded to the CPU
  expandable   heat, with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch's own
               cuMemCreate/cuMemMap segments)
  mallocasync  heat, with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (stream-ordered pools)
  graph        heat, and one CUDA graph of a whole forward captured and replayed

Every capped run must give the reference's tokens. Decode tokens/s are printed side by
side as a table (ratios to the uncapped run; never a timed pass/fail). Output: "ok - ..." /
"not ok - ..." lines, "# " lines, and a plan "1..N"; exit status 0 when all passed.

  torch_tiering.py --libtiermem PATH --work DIR [--tokens N] [--deadline S]   the runs (torch)
  torch_tiering.py --dry-run [--tiermem-log LOG]                 the plan, without torch
  torch_tiering.py --worker MODE --work DIR ...                  one run (used by the above)

No run asks for managed memory (a GPU can hang when managed memory outgrows what is free):
TIERMEM_POLICY is set to heat or size explicitly, and a plan holding anything else is
refused before a process starts.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

SEED = 1234
PROMPT_LEN = 32
HBM_SHARE = 0.60  # of the weights' bytes: TIERMEM_HBM_LIMIT and accelerate's max_memory
# About 8 GB of bf16: 4.0 billion parameters, a 7B-wide Llama with 21 layers and GQA.
CONFIG = dict(
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=21,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)
WORKER_TIMEOUT_S = 150  # one run; --deadline bounds them all


# ---------------------------------------------------------------- the plan (no torch)

def parameter_count(c):
    """Parameters of a Llama of config c: embeddings, per layer attention, MLP and two
    norms, the final norm and the (untied) output head."""
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    head_dim = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * head_dim
    attention = h * h + 2 * h * kv + h * h
    mlp = 3 * h * inter
    per_layer = attention + mlp + 2 * h
    heads = 1 if c["tie_word_embeddings"] else 2
    return heads * c["vocab_size"] * h + layers * per_layer + h


def model_bytes(c=CONFIG):
    return 2 * parameter_count(c)  # bf16


def hbm_limit_bytes():
    """60% of the weights, in whole 2 MiB chunks."""
    chunk = 2 << 20
    return int(model_bytes() * HBM_SHARE) // chunk * chunk


class Run:
    def __init__(self, name, label, mode, tiermem, env=None):
        self.name, self.label, self.mode, self.tiermem = name, label, mode, tiermem
        self.env = env or {}


RUNS = [
    Run("uncapped", "uncapped (no libtiermem.so)", "decode", False),
    Run("heat", "tiermem heat", "decode", True, {"TIERMEM_POLICY": "heat"}),
    Run("size", "tiermem size", "decode", True, {"TIERMEM_POLICY": "size"}),
    Run("accelerate", "accelerate offload (device_map=auto)", "accelerate", False),
    Run("expandable", "tiermem heat, expandable_segments:True", "decode", True,
        {"TIERMEM_POLICY": "heat", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    Run("mallocasync", "tiermem heat, backend:cudaMallocAsync", "decode", True,
        {"TIERMEM_POLICY": "heat", "PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
    Run("graph", "tiermem heat, CUDA graph", "graph", True, {"TIERMEM_POLICY": "heat"}),
]


def run_env(run, libtiermem, base=None):
    """The environment of one run: the caller's, less every TIERMEM_* setting but the ledger,
    the allocator's and any LD_PRELOAD, plus the run's own."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if (not k.startswith("TIERMEM_") or k == "TIERMEM_LEDGER")
           and k not in ("PYTORCH_CUDA_ALLOC_CONF", "LD_PRELOAD")}
    env["PYTHONHASHSEED"] = str(SEED)
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    if run.tiermem:
        env["LD_PRELOAD"] = libtiermem
        env["TIERMEM_HBM_LIMIT"] = str(hbm_limit_bytes())
        env["TIERMEM_LOG"] = "info"
    env.update(run.env)
    policy = env.get("TIERMEM_POLICY", "")
    if run.tiermem and policy not in ("heat", "size"):
        raise SystemExit(f"run {run.name}: TIERMEM_POLICY={policy!r}: only heat or size run on a GPU "
                         "(the managed baseline stays a simcuda figure)")
    if "managed" in env.get("PYTORCH_CUDA_ALLOC_CONF", "").lower():
        raise SystemExit(f"run {run.name}: PYTORCH_CUDA_ALLOC_CONF asks for managed memory")
    return env


def gib(n):
    return f"{n / (1 << 30):.2f} GiB"


# ---------------------------------------------------------------- reporting

class Tap:
    def __init__(self):
        self.count = self.failed = 0

    def check(self, ok, what, detail=None):
        self.count += 1
        self.failed += 0 if ok else 1
        print(f"{'' if ok else 'not '}ok - {what}")
        if not ok and detail:
            for line in str(detail).splitlines()[-12:]:
                print(f"#   {line}")
        sys.stdout.flush()
        return ok

    def plan(self):
        print(f"1..{self.count}")
        return 1 if self.failed else 0


def print_table(rows):
    """rows: (label, tokens/s or None, ratio or None, tokens, memory)."""
    head = ("run", "decode tok/s", "x uncapped", "tokens", "memory")
    cells = [head] + [(label, "-" if tps is None else f"{tps:.2f}", "-" if ratio is None else f"{ratio:.3f}",
                       tokens, memory) for label, tps, ratio, tokens, memory in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(4)]
    for r in cells:
        print("# " + "  ".join([r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in (1, 2)] +
                               [r[3].ljust(widths[3]), r[4]]).rstrip())


def tiermem_memory(stderr_text):
    """'hbm X, cxl Y, ddr Z' from libtiermem's exit line (its peaks per tier), or None."""
    m = re.search(r"^tiermem: exit: peak (hbm [^,]+, cxl [^,]+, ddr [^;]+);", stderr_text, re.M)
    return m.group(1) if m else None


def spilled(memory):
    """Whether the peaks put anything below HBM."""
    lower = re.findall(r"(?:cxl|ddr) ([0-9.]+) ?[KMGT]?i?B", memory or "")
    return any(float(x) > 0 for x in lower)


def check_tiermem_lines(tap, label, stderr_text):
    """libtiermem.so was in front (its start-up line about the tiers, its exit line) and
    the weights spilled below HBM."""
    memory = tiermem_memory(stderr_text)
    tap.check("tiermem: tiers:" in stderr_text and memory is not None,
              f"{label}: libtiermem.so was in front (start-up and exit lines)", stderr_text)
    tap.check(spilled(memory), f"{label}: the weights spilled below HBM (peak {memory})")


# ---------------------------------------------------------------- the parent

def dry_run(tiermem_log):
    """Everything but torch: the model's size, the limit, each run's environment, reading
    libtiermem's lines (from TIERMEM_LOG, a run of it that spilled, on simcuda), the table."""
    tap = Tap()
    n, size, limit = parameter_count(CONFIG), model_bytes(), hbm_limit_bytes()
    print(f"# model: {n / 1e9:.2f} billion parameters, {size / 1e9:.2f} GB of bf16 ({gib(size)})")
    tap.check(7e9 <= size <= 9e9, f"the model is about 8 GB of bf16 ({size / 1e9:.2f} GB)")
    tap.check(abs(limit / size - HBM_SHARE) < 0.01,
              f"TIERMEM_HBM_LIMIT and max_memory hold {limit} bytes, {100 * limit / size:.1f}% of the weights")
    fake = "/nonexistent/libtiermem.so"
    envs_ok = True
    for run in RUNS:
        env = run_env(run, fake, base={"PATH": "/usr/bin", "TIERMEM_POLICY": "managed", "LD_PRELOAD": "x.so"})
        shown = " ".join(f"{k}={env[k]}" for k in sorted(env) if k.startswith(("TIERMEM_", "PYTORCH_", "LD_PRELOAD")))
        print(f"# {run.name:12} {run.mode:10} {shown or '(plain PyTorch)'}")
        envs_ok &= env.get("LD_PRELOAD") == (fake if run.tiermem else None)
        envs_ok &= env.get("TIERMEM_POLICY") in (("heat", "size") if run.tiermem else (None,))
    tap.check(envs_ok, "every run's environment drops inherited TIERMEM_*/LD_PRELOAD and sets its own policy")
    refused = False
    try:
        run_env(Run("bad", "bad", "decode", True, {"TIERMEM_POLICY": "managed"}), fake)
    except SystemExit:
        refused = True
    tap.check(refused, "a run asking for TIERMEM_POLICY=managed is refused before it starts")
    if tiermem_log:
        with open(tiermem_log, errors="replace") as f:
            check_tiermem_lines(tap, f"libtiermem.so's lines in {os.path.basename(tiermem_log)}", f.read())
    tap.check(not spilled("hbm 4 GiB, cxl 0 B, ddr 0 B") and spilled("hbm 4 GiB, cxl 0 B, ddr 2.5 GiB"),
              "peaks of 0 B below HBM are no spill, 2.5 GiB in ddr is")
    print_table([(r.label, None, None, "-", "-") for r in RUNS])
    return tap.plan()


def run_worker(args, name, mode, env, extra):
    """Runs one worker process (logs NAME.out and NAME.err in the work folder); returns
    (its result or None, its standard error or why it failed)."""
    out_path = os.path.join(args.work, f"{name}.out")
    err_path = os.path.join(args.work, f"{name}.err")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--work", args.work,
           "--tokens", str(args.tokens)] + extra
    left = args.deadline_at - time.monotonic()
    if left < 20:
        return None, f"not started: the runs' {args.deadline:.0f} s were spent"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        try:
            rc = subprocess.run(cmd, env=env, stdout=out, stderr=err,
                                timeout=min(WORKER_TIMEOUT_S, left)).returncode
        except subprocess.TimeoutExpired:
            rc = f"none: stopped after {min(WORKER_TIMEOUT_S, left):.0f} s"
    with open(err_path, errors="replace") as f:
        err_text = f.read()
    with open(out_path, errors="replace") as f:
        lines = [l for l in f if l.startswith("result ")]
    if rc != 0 or not lines:
        return None, f"exit status {rc}\n{err_text}"
    return json.loads(lines[-1][len("result "):]), err_text


def main_runs(args):
    tap = Tap()
    os.makedirs(args.work, exist_ok=True)
    size, limit = model_bytes(), hbm_limit_bytes()
    print(f"# model: {parameter_count(CONFIG) / 1e9:.2f} billion parameters, {gib(size)} of bf16; "
          f"HBM for the capped runs: {gib(limit)} ({100 * limit / size:.0f}%); {args.tokens} tokens greedy")
    plain = run_env(RUNS[0], args.libtiermem)
    made, err = run_worker(args, "checkpoint", "checkpoint", plain, [])
    if not tap.check(made is not None, "random bf16 weights written as a checkpoint (seeded)", err):
        return tap.plan()
    print(f"# checkpoint: {made['tensors']} tensors, {gib(made['bytes'])} in {made['seconds']:.1f} s")

    results = {}
    for run in RUNS:
        extra = ["--limit", str(limit)] if run.mode == "accelerate" else []
        res, err = run_worker(args, run.name, run.mode, run_env(run, args.libtiermem), extra)
        results[run.name] = (res, err)
        if not tap.check(res is not None, f"{run.label}: ran", err):
            continue
        if run.tiermem:
            check_tiermem_lines(tap, run.label, err)
    ref = results["uncapped"][0]
    rows = []
    for run in RUNS:
        res = results[run.name][0]
        if res is None:
            rows.append((run.label, None, None, "failed", "-"))
            continue
        if run.name == "uncapped":
            tap.check(len(res["tokens"]) == args.tokens, f"uncapped: {args.tokens} reference tokens")
            print(f"# reference tokens: {' '.join(map(str, res['tokens']))}")
            same = "reference"
        elif ref is None:
            same = "no reference"
        else:
            first = next((i for i, (a, b) in enumerate(zip(ref["tokens"], res["tokens"])) if a != b), None)
            equal = res["tokens"] == ref["tokens"]
            tap.check(equal, f"{run.label}: the {args.tokens} tokens equal the uncapped run's",
                      None if equal else f"first difference at token {first}: {res['tokens']}")
            same = "equal" if equal else f"differ at {first}"
        if run.mode == "accelerate":
            on_gpu, total = res["modules_on_gpu"], res["modules"]
            tap.check(on_gpu < total, f"{run.label}: {total - on_gpu} of {total} modules offloaded to the CPU")
            memory = f"{on_gpu} of {total} modules on the GPU, max_memory {gib(limit)}"
        elif run.tiermem:
            memory = tiermem_memory(results[run.name][1]) or "?"
        else:
            memory = "all in HBM"
        if run.mode == "graph":
            g = res["graph"]
            tap.check(g["replay_equals_eager"], f"{run.label}: the replayed forward's logits equal the eager one's")
            tap.check(g["new_input_equals_eager"],
                      f"{run.label}: after new input ids, the replay's logits equal the eager forward's")
            print(f"# graph: a forward of {g['length']} tokens: eager {g['eager_ms']:.2f} ms, "
                  f"replay {g['replay_ms']:.2f} ms (replay / eager {g['replay_ms'] / g['eager_ms']:.3f})")
        ratio = res["decode_tps"] / ref["decode_tps"] if ref else None
        rows.append((run.label, res["decode_tps"], ratio, same, memory))
    print_table(rows)
    offload = results["accelerate"][0]
    for run in RUNS:
        res = results[run.name][0]
        if run.tiermem and res and offload:
            print(f"# {run.label} / accelerate offload, decode tokens/s: {res['decode_tps'] / offload['decode_tps']:.3f}")
    return tap.plan()


# ---------------------------------------------------------------- the workers (torch)

def prompt_ids(torch):
    g = torch.Generator().manual_seed(SEED)
    return torch.randint(3, CONFIG["vocab_size"], (1, PROMPT_LEN), generator=g)


def dtype_keyword(transformers):
    """from_pretrained's dtype keyword: dtype since 4.56, torch_dtype before."""
    major, minor = (int(x) for x in re.findall(r"\d+", transformers.__version__)[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def worker_checkpoint(args):
    """Random weights, generated on the GPU with a seeded generator tensor by tensor in
    name order (norms are ones), saved with the config as a safetensors checkpoint."""
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForCausalLM
    start = time.perf_counter()
    config = LlamaConfig(**CONFIG, torch_dtype="bfloat16")
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in LlamaForCausalLM(config).state_dict().items()}
    g = torch.Generator(device="cuda").manual_seed(SEED)
    tensors, total = {}, 0
    for name in sorted(shapes):
        if name.endswith("norm.weight"):
            t = torch.ones(shapes[name], dtype=torch.bfloat16)
        else:
            t = torch.empty(shapes[name], dtype=torch.bfloat16, device="cuda").normal_(0.0, 0.02, generator=g).cpu()
        tensors[name] = t
        total += t.numel() * t.element_size()
    save_file(tensors, os.path.join(args.work, "model.safetensors"))
    config.save_pretrained(args.work)
    emit({"tensors": len(tensors), "bytes": total, "seconds": time.perf_counter() - start})


def greedy(torch, model, prompt, n):
    """n greedy tokens after the prompt; decode tokens/s over the n - 1 steps after the first."""
    with torch.inference_mode():
        out = model(input_ids=prompt, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
        tokens = [int(nxt)]
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n - 1):
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens.append(int(nxt))
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    return tokens, (n - 1) / seconds


def load(torch, transformers, work, **kw):
    from transformers import LlamaForCausalLM
    kw[dtype_keyword(transformers)] = torch.bfloat16
    model = LlamaForCausalLM.from_pretrained(work, attn_implementation="sdpa", **kw)
    dtypes = {p.dtype for p in model.parameters()}
    if dtypes != {torch.bfloat16}:
        raise SystemExit(f"the model loaded as {dtypes}, not bf16")
    return model.eval()


def worker_decode(args):
    import torch
    import transformers
    torch.manual_seed(SEED)
    model = load(torch, transformers, args.work).to("cuda")
    prompt = prompt_ids(torch).to("cuda")
    greedy(torch, model, prompt, 4)  # warm-up: cuBLAS handles, first launches
    tokens, tps = greedy(torch, model, prompt, args.tokens)
    result = {"tokens": tokens, "decode_tps": tps}
    if args.worker == "graph":
        result["graph"] = graph_check(torch, model, prompt, tokens)
    emit(result)


def graph_check(torch, model, prompt, tokens):
    """One CUDA graph of a whole forward (no KV cache) over the prompt and the generated
    tokens, captured under libtiermem.so and replayed: its logits must equal an eager
    forward's, again after new input ids are copied into the captured input."""
    seq = torch.cat([prompt, torch.tensor([tokens], device="cuda")], dim=1)
    other = torch.flip(seq, dims=[1]).contiguous()
    static_in = seq.clone()
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(input_ids=static_in, use_cache=False)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_logits = model(input_ids=static_in, use_cache=False).logits
        graph.replay()
        eager = model(input_ids=seq, use_cache=False).logits
        torch.cuda.synchronize()
        first = torch.equal(static_logits, eager)
        static_in.copy_(other)
        graph.replay()
        eager_other = model(input_ids=other, use_cache=False).logits
        torch.cuda.synchronize()
        second = torch.equal(static_logits, eager_other)
        reps = 5
        start = time.perf_counter()
        for _ in range(reps):
            model(input_ids=other, use_cache=False)
        torch.cuda.synchronize()
        eager_ms = (time.perf_counter() - start) * 1000 / reps
        start = time.perf_counter()
        for _ in range(reps):
            graph.replay()
        torch.cuda.synchronize()
        replay_ms = (time.perf_counter() - start) * 1000 / reps
    return {"replay_equals_eager": first, "new_input_equals_eager": second, "length": seq.shape[1],
            "eager_ms": eager_ms, "replay_ms": replay_ms}


def worker_accelerate(args):
    """accelerate's offload as a user asks for it: the same bytes on the GPU, the rest on
    the CPU, moved to the GPU layer by layer at each forward."""
    import torch
    import transformers
    torch.manual_seed(SEED)
    model = load(torch, transformers, args.work, device_map="auto",
                 max_memory={0: args.limit, "cpu": 4 * model_bytes()})
    placement = list(model.hf_device_map.values())
    prompt = prompt_ids(torch).to("cuda")
    greedy(torch, model, prompt, 4)
    tokens, tps = greedy(torch, model, prompt, args.tokens)
    emit({"tokens": tokens, "decode_tps": tps, "modules": len(placement),
          "modules_on_gpu": sum(1 for d in placement if d not in ("cpu", "disk"))})


def emit(result):
    print("result " + json.dumps(result))
    sys.stdout.flush()


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--libtiermem", help="path of libtiermem.so")
    parser.add_argument("--work", help="folder for the checkpoint and the runs' logs")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--deadline", type=float, default=330, help="seconds for all the runs")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--tiermem-log", help="with --dry-run: a TIERMEM_LOG=info log of a run that spilled")
    parser.add_argument("--worker", choices=["checkpoint", "decode", "accelerate", "graph"])
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dry_run:
        return dry_run(args.tiermem_log)
    if args.worker:
        {"checkpoint": worker_checkpoint, "decode": worker_decode, "graph": worker_decode,
         "accelerate": worker_accelerate}[args.worker](args)
        return 0
    if not args.libtiermem or not args.work:
        parser.error("--libtiermem and --work are needed (or --dry-run)")
    args.libtiermem = os.path.abspath(args.libtiermem)
    args.deadline_at = time.monotonic() + args.deadline
    return main_runs(args)


if __name__ == "__main__":
    sys.exit(main())
