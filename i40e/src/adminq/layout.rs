//! Little-endian byte layouts for admin-queue parameters and buffers: [`aq_layout!`] declares a struct whose every
//! field sits at an explicit byte offset, with a compile-time check that it fits the declared size, and generates
//! its encoder and decoder. Bytes no field covers (reserved ones) are left as they are.

/// A value stored little-endian at a byte offset.
pub trait Le: Sized + Copy {
    /// Its size in bytes.
    const SIZE: usize;
    /// Writes it at `b[off..off + SIZE]`.
    fn put(self, b: &mut [u8], off: usize);
    /// Reads it from `b[off..off + SIZE]`.
    fn get(b: &[u8], off: usize) -> Self;
}

macro_rules! le_int {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = size_of::<$t>();
            fn put(self, b: &mut [u8], off: usize) {
                b[off..off + Self::SIZE].copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8], off: usize) -> Self {
                let mut a = [0u8; size_of::<$t>()];
                a.copy_from_slice(&b[off..off + Self::SIZE]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
le_int!(u8, u16, u32, u64);

impl<T: Le + Default, const N: usize> Le for [T; N] {
    const SIZE: usize = T::SIZE * N;
    fn put(self, b: &mut [u8], off: usize) {
        for (i, v) in self.into_iter().enumerate() {
            v.put(b, off + i * T::SIZE);
        }
    }
    fn get(b: &[u8], off: usize) -> Self {
        std::array::from_fn(|i| T::get(b, off + i * T::SIZE))
    }
}

/// Declares a layout: `aq_layout!(Name, SIZE, { field: type = offset, ... })`.
macro_rules! aq_layout {
    ($(#[$m:meta])* $name:ident, $size:expr, { $( $(#[$fm:meta])* $field:ident : $ty:ty = $off:expr ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty, )*
        }
        impl $name {
            /// Bytes the layout covers.
            pub const SIZE: usize = $size;
            /// Writes the fields into `b` (at least [`Self::SIZE`] bytes), leaving other bytes as they are.
            pub fn encode_into(&self, b: &mut [u8]) {
                $( <$ty as $crate::adminq::layout::Le>::put(self.$field, b, $off); )*
            }
            /// The fields over zeroed bytes.
            pub fn encode(&self) -> [u8; $size] {
                let mut b = [0u8; $size];
                self.encode_into(&mut b);
                b
            }
            /// Reads the fields from `b` (at least [`Self::SIZE`] bytes).
            pub fn decode(b: &[u8]) -> Self {
                Self { $( $field: <$ty as $crate::adminq::layout::Le>::get(b, $off), )* }
            }
        }
        // Every field inside the declared size.
        #[allow(clippy::int_plus_one)]
        const _: () = { $( assert!($off + <$ty as $crate::adminq::layout::Le>::SIZE <= $size); )* };
    };
}
pub(crate) use aq_layout;
