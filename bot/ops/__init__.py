"""Operations: configuration, logging, metrics."""
