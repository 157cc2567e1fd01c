# Integration: the engine under the interposer on simcuda (what `make demo` shows, asserted).
TEST_SCRIPTS += tests/integration/test_docs.sh tests/integration/test_models.sh tests/integration/test_tiered_engine.sh tests/integration/test_demo.sh tests/integration/test_heat_policy.sh \
                tests/integration/test_stream.sh \
                tests/integration/test_warm_start.sh
