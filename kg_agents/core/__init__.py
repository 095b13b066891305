"""What every reasoning graph shares: state and reducers, error records, metering, linking, path
verification, answer parsing, support paths, context merging, prompts and the registry."""
