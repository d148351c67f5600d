"""Functions and data shared by the test modules: tiny models, command-line runs, synthetic inputs."""
