//! eal
