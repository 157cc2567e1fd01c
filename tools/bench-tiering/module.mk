# bench-tiering: simulated step time of every placement policy against the link bound, on
# generated models 1x to 3x the device (tools/bench-tiering/bench-tiering.sh); run by
# `make bench` and alone by `make bench-tiering`.
BENCH_CMDS += tools/bench-tiering/bench-tiering.sh

.PHONY: bench-tiering
bench-tiering: all
	@O=$(O) tools/bench-tiering/bench-tiering.sh
