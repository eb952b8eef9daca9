//! Server-sent events parsing over a byte stream.
