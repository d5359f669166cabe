//! The packed table entry shared by the IPv4 and IPv6 tables.
//!
//! One `u32` per entry so a /24 lookup is one 4-byte load. Fields (low to high): the next hop or, for an extended
//! entry, the index of the next-level group (22 bits); `VALID`; `EXT` (the entry points to a group); the length
//! of the prefix that wrote the entry (8 bits, 0..=128). The length is kept in every entry so add and delete can
//! tell which rule owns it without looking at the rule table.

/// A table entry (see the module docs for its layout).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(transparent)]
pub(crate) struct Entry(u32);

impl Entry {
    /// Width of the next-hop / group-index field.
    pub const NEXT_HOP_BITS: u32 = 22;
    /// Mask of the next-hop / group-index field.
    const NEXT_HOP: u32 = (1 << Self::NEXT_HOP_BITS) - 1;
    /// The entry holds a route.
    const VALID: u32 = 1 << 22;
    /// `VALID`, for lookups that test several raw entries at once (the SSE2 resolve).
    #[cfg(target_arch = "x86_64")]
    pub const VALID_MASK: u32 = Self::VALID;
    /// Bit number of `EXT`.
    pub const EXT_BIT: i32 = 23;
    /// The entry points to a next-level group.
    const EXT: u32 = 1 << Self::EXT_BIT;
    /// First bit of the prefix-length field.
    const DEPTH_SHIFT: u32 = 24;
    /// The largest next hop (and group index) an entry holds.
    pub const MAX_NEXT_HOP: u32 = Self::NEXT_HOP;

    /// No route (all bits clear, so a zeroed table is an empty one).
    pub const INVALID: Entry = Entry(0);

    /// The entry stored as `raw` in a table.
    #[inline(always)]
    pub const fn from_raw(raw: u32) -> Entry {
        Entry(raw)
    }

    /// The bits stored in a table.
    #[inline(always)]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// A route to `next_hop` written by a prefix of length `depth`.
    #[inline]
    pub const fn route(next_hop: u32, depth: u8) -> Entry {
        Entry((next_hop & Self::NEXT_HOP) | Self::VALID | ((depth as u32) << Self::DEPTH_SHIFT))
    }

    /// A pointer to next-level group `group`.
    #[inline]
    pub const fn group(group: u32) -> Entry {
        Entry((group & Self::NEXT_HOP) | Self::EXT)
    }

    /// Holds a route.
    #[inline(always)]
    pub const fn is_valid(self) -> bool {
        self.0 & Self::VALID != 0
    }

    /// Points to a next-level group.
    #[inline(always)]
    pub const fn is_ext(self) -> bool {
        self.0 & Self::EXT != 0
    }

    /// The next hop (for a route) or group index (for an extended entry).
    #[inline(always)]
    pub const fn next_hop(self) -> u32 {
        self.0 & Self::NEXT_HOP
    }

    /// The length of the prefix that wrote this route.
    #[inline(always)]
    pub const fn depth(self) -> u8 {
        (self.0 >> Self::DEPTH_SHIFT) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::Entry;

    #[test]
    fn fields_round_trip() {
        let e = Entry::route(Entry::MAX_NEXT_HOP, 128);
        assert!(e.is_valid() && !e.is_ext());
        assert_eq!((e.next_hop(), e.depth()), (Entry::MAX_NEXT_HOP, 128));
        let g = Entry::group(12345);
        assert!(g.is_ext() && !g.is_valid());
        assert_eq!(g.next_hop(), 12345);
        assert!(!Entry::INVALID.is_valid() && !Entry::INVALID.is_ext());
        assert_eq!(Entry::route(7, 0).depth(), 0);
    }
}
