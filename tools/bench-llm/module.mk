# bench-llm: tiermem-llm tokens/s on a generated ~500 MB model (batch 1 and 16, every KV
# dtype) and fp8 vs f16 attention at context 2048; kv-quality: mean KL and top-1 agreement
# of fp8 KV against f32 under teacher forcing; bench-load: weight loading against the file's sequential
# read rate. Run by `make bench`.
BENCH_CMDS += tools/bench-llm/bench-llm.sh tools/bench-llm/kv-quality.sh tools/bench-llm/bench-load.sh
