//! Retries with backoff, shared by every backend.
