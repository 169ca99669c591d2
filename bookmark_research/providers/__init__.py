"""Web and scholarly providers behind one adapter interface, plus the keyless direct fetcher."""
