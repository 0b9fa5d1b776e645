"""The study on top of the library: subsamples, tables, tests, consistency, figures."""
