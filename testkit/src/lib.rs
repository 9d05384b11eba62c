//! Helpers for Headspace's tests, kept out of the product crates' public API.
//!
//! - [`error_logs`]: fail a test on any ERROR log it did not declare.

pub mod error_logs;
