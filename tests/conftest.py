pytest_plugins = ["tests.vllm_fixtures"]
