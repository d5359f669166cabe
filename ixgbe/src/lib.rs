//! ixgbe (under construction)
