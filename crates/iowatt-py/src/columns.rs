//! Numeric columns crossing between Rust and Python as little-endian byte buffers (Arrow's
//! layout): out with one copy, in checked for their length.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[cfg(not(target_endian = "little"))]
compile_error!("column buffers are handed to Arrow as they are in memory: little-endian only");

/// The primitive types columns are made of.
pub trait Column: Copy {
    const SIZE: usize = std::mem::size_of::<Self>();
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("chunks of the type's size"))
            }
        }
    )*};
}
column!(i64, i32, u64, u32, u16, u8, f64);

/// A column's values as the bytes Python builds an Arrow buffer from, copied once.
pub fn column_bytes<'py, T: Column>(
    py: Python<'py>,
    values: &[T],
) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: T is a primitive number (Column is implemented for those only): no padding, any
    // byte pattern valid, and u8 has the weakest alignment; the slice covers exactly `values`.
    let bytes = unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    };
    Ok(PyBytes::new(py, bytes))
}

/// `n` values of a little-endian buffer; None if it does not hold exactly `n`.
pub fn values<T: Column>(bytes: &[u8], n: usize) -> Option<Vec<T>> {
    (bytes.len() == n * T::SIZE).then(|| bytes.chunks_exact(T::SIZE).map(T::from_le).collect())
}
