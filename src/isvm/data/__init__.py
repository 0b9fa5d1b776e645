"""The paper's 14 data sets: registry, sources (OpenML or the bundled snapshot), preprocessing."""
