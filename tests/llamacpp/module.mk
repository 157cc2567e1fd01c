# tests/llamacpp — llama.cpp's CUDA build (node-llama-cpp's prebuilt backend, installed by
# `make deps-test` into build/llamacpp-cuda when npm is present) as a real engine on simcuda
# under libtiermem.so: the whole load and context creation, then the clean stop at its
# first kernel. Skipped with the reason without node, the package or the CUDA 13 libraries.
test-progs: $(O)/lib/simcuda/libcuda.so.1 $(O)/lib/libtiermem.so $(O)/bin/tiermem-stat $(O)/bin/tiermem-mkmodel
TEST_SCRIPTS += tests/llamacpp/test_llamacpp_cuda.sh
