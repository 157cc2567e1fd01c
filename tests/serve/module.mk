# tests/serve: tiermem-llm serve driven by real clients (curl, the openai npm package).
TEST_SCRIPTS += tests/serve/test_serve.sh
