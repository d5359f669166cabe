//! 82576 (igb) variant: placeholder.
