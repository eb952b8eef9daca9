//! A scripted provider for tests and benchmarks only.
