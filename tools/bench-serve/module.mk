# bench-serve: tiermem-llm serve under a multi-turn chat workload, KV pool in HBM only
# against the same under libtiermem.so with a virtual view; a table and a PNG.
.PHONY: bench-serve
bench-serve: all
	@O=$(O) tools/bench-serve/bench-serve.sh
