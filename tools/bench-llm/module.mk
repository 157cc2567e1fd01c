# bench-llm: tiermem-llm tokens/s on a generated ~500 MB model (batch 1 and 16, every KV
# dtype) and fp8 vs f16 attention at context 2048; run by `make bench`.
BENCH_CMDS += tools/bench-llm/bench-llm.sh
