//! C ABI (placeholder)
