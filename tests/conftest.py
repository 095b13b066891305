pytest_plugins = ["tests.servers", "tests.vllm_fixtures"]
