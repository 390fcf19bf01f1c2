//! The edge between Rust and the Redis module API: the allocator, command registration and
//! dispatch, the per-call context with its replies, and key access. Every `unsafe` block of the
//! command path lives here.

#[cfg(not(any(test, feature = "standalone")))]
pub mod alloc;
pub mod background;
pub mod call;
pub mod command;
pub mod guard;
pub mod key;
pub mod log;
pub mod module;
