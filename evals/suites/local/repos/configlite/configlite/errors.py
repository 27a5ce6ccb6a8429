class ConfigError(ValueError):
    """The configuration text is malformed or a value has the wrong type."""
