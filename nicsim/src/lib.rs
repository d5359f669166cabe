//! nicsim (under construction)
