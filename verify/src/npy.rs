//! NumPy's `.npy` format (version 1.0), for the dtypes port's kernels
//! take (bool, int8–int64, uint8–uint64, float32, float64, complex64,
//! complex128): how inputs and results travel between Rust and the CPython run of
//! the original.

use std::path::Path;

use port_codegen::ir::ScalarType;
use port_codegen::ArrayData;

use crate::error::VerifyError;

/// An n-dimensional C-order array (`shape` empty for a 0-d value).
#[derive(Clone, Debug, PartialEq)]
pub struct NdArray {
    pub shape: Vec<usize>,
    pub data: ArrayData,
}

impl NdArray {
    pub fn elem(&self) -> ScalarType {
        self.data.elem()
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Element `k` (flat index) as `f64` (booleans 0/1).
    pub fn get_f64(&self, k: usize) -> f64 {
        match &self.data {
            ArrayData::Bool(v) => f64::from(u8::from(v[k])),
            ArrayData::I32(v) => f64::from(v[k]),
            ArrayData::I64(v) => v[k] as f64,
            ArrayData::F32(v) => f64::from(v[k]),
            ArrayData::F64(v) => v[k],
            ArrayData::U64(v) => v[k] as f64,
            // A complex element's real part (see `get_c`).
            ArrayData::C64(v) => f64::from(v[k][0]),
            ArrayData::C128(v) => v[k][0],
            _ => self.get_i64(k) as f64,
        }
    }

    /// Element `k` as a complex number `(re, im)`; a real one has `im` 0.
    pub fn get_c(&self, k: usize) -> (f64, f64) {
        match &self.data {
            ArrayData::C64(v) => (f64::from(v[k][0]), f64::from(v[k][1])),
            ArrayData::C128(v) => (v[k][0], v[k][1]),
            _ => (self.get_f64(k), 0.0),
        }
    }

    /// Element `k` of an integer or bool array as `i64` (a `u64` as its
    /// bits); floats truncate.
    pub fn get_i64(&self, k: usize) -> i64 {
        elem_i64(&self.data, k)
    }
}

/// Element `k` of `data` as `i64` (see [`NdArray::get_i64`]).
pub fn elem_i64(data: &ArrayData, k: usize) -> i64 {
    match data {
        ArrayData::Bool(v) => i64::from(v[k]),
        ArrayData::I32(v) => i64::from(v[k]),
        ArrayData::I64(v) => v[k],
        ArrayData::F32(v) => v[k] as i64,
        ArrayData::F64(v) => v[k] as i64,
        ArrayData::I8(v) => i64::from(v[k]),
        ArrayData::I16(v) => i64::from(v[k]),
        ArrayData::U8(v) => i64::from(v[k]),
        ArrayData::U16(v) => i64::from(v[k]),
        ArrayData::U32(v) => i64::from(v[k]),
        ArrayData::U64(v) => v[k] as i64,
        ArrayData::C64(v) => v[k][0] as i64,
        ArrayData::C128(v) => v[k][0] as i64,
    }
}

impl NdArray {
    /// [`Self::convert`], taking the array: no copy when it already
    /// holds `to`.
    pub fn into_elem(self, to: ScalarType) -> NdArray {
        if self.elem() == to {
            self
        } else {
            self.convert(to)
        }
    }

    /// The same values as another element type.
    pub fn convert(&self, to: ScalarType) -> NdArray {
        if self.elem() == to {
            return self.clone();
        }
        let n = self.len();
        if to.is_complex() {
            let vals = (0..n).map(|k| self.get_c(k));
            let data = if to == ScalarType::C64 {
                ArrayData::C64(vals.map(|(r, i)| [r as f32, i as f32]).collect())
            } else {
                ArrayData::C128(vals.map(|(r, i)| [r, i]).collect())
            };
            return NdArray {
                shape: self.shape.clone(),
                data,
            };
        }
        if to.is_int() && !self.elem().is_float() {
            let ints: Vec<i64> = (0..n).map(|k| self.get_i64(k)).collect();
            return NdArray {
                shape: self.shape.clone(),
                data: from_i64s(to, &ints),
            };
        }
        let vals = (0..n).map(|k| self.get_f64(k));
        let data = match to {
            ScalarType::Bool => ArrayData::Bool(vals.map(|v| v != 0.0).collect()),
            ScalarType::I32 => ArrayData::I32(vals.map(|v| v as i32).collect()),
            ScalarType::I64 => ArrayData::I64(vals.map(|v| v as i64).collect()),
            ScalarType::F32 => ArrayData::F32(vals.map(|v| v as f32).collect()),
            ScalarType::F64 => ArrayData::F64(vals.collect()),
            ScalarType::U64 => ArrayData::U64(vals.map(|v| v as u64).collect()),
            t => {
                let ints: Vec<i64> = vals.map(|v| v as i64).collect();
                from_i64s(t, &ints)
            }
        };
        NdArray {
            shape: self.shape.clone(),
            data,
        }
    }
}

/// Integers of type `t` from `i64`s, wrapped like NumPy's `astype`.
pub fn from_i64s(t: ScalarType, v: &[i64]) -> ArrayData {
    match t {
        ScalarType::Bool => ArrayData::Bool(v.iter().map(|&x| x != 0).collect()),
        ScalarType::I8 => ArrayData::I8(v.iter().map(|&x| x as i8).collect()),
        ScalarType::I16 => ArrayData::I16(v.iter().map(|&x| x as i16).collect()),
        ScalarType::I32 => ArrayData::I32(v.iter().map(|&x| x as i32).collect()),
        ScalarType::I64 => ArrayData::I64(v.to_vec()),
        ScalarType::U8 => ArrayData::U8(v.iter().map(|&x| x as u8).collect()),
        ScalarType::U16 => ArrayData::U16(v.iter().map(|&x| x as u16).collect()),
        ScalarType::U32 => ArrayData::U32(v.iter().map(|&x| x as u32).collect()),
        ScalarType::U64 => ArrayData::U64(v.iter().map(|&x| x as u64).collect()),
        ScalarType::F32 => ArrayData::F32(v.iter().map(|&x| x as f32).collect()),
        ScalarType::F64 => ArrayData::F64(v.iter().map(|&x| x as f64).collect()),
        ScalarType::C64 => ArrayData::C64(v.iter().map(|&x| [x as f32, 0.0]).collect()),
        ScalarType::C128 => ArrayData::C128(v.iter().map(|&x| [x as f64, 0.0]).collect()),
    }
}

fn descr(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "|b1",
        ScalarType::I32 => "<i4",
        ScalarType::I64 => "<i8",
        ScalarType::F32 => "<f4",
        ScalarType::F64 => "<f8",
        ScalarType::I8 => "|i1",
        ScalarType::I16 => "<i2",
        ScalarType::U8 => "|u1",
        ScalarType::U16 => "<u2",
        ScalarType::U32 => "<u4",
        ScalarType::U64 => "<u8",
        ScalarType::C64 => "<c8",
        ScalarType::C128 => "<c16",
    }
}

/// Writes `a` as a `.npy` file.
pub fn write(path: &Path, a: &NdArray) -> Result<(), VerifyError> {
    let shape = match a.shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", a.shape[0]),
        _ => format!(
            "({})",
            a.shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(a.elem())
    );
    // Magic (6) + version (2) + length (2) + header, padded to 64 bytes.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    match &a.data {
        ArrayData::Bool(v) => bytes.extend(v.iter().map(|&b| u8::from(b))),
        ArrayData::I32(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::I64(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::F32(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::F64(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::I8(v) => bytes.extend(v.iter().map(|&x| x as u8)),
        ArrayData::U8(v) => bytes.extend_from_slice(v),
        ArrayData::I16(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::U16(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::U32(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::U64(v) => v
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::C64(v) => v
            .iter()
            .flatten()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
        ArrayData::C128(v) => v
            .iter()
            .flatten()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes())),
    }
    std::fs::write(path, bytes)
        .map_err(|e| VerifyError::Io(path.display().to_string(), e.to_string()))
}

/// Reads a `.npy` file of one of port's dtypes (C order).
pub fn read(path: &Path) -> Result<NdArray, VerifyError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| VerifyError::Io(shown.clone(), e.to_string()))?;
    let bad = |m: &str| VerifyError::BadData(format!("{shown}: {m}"));
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file"));
    }
    let (hlen, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad("truncated header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(bad(&format!("unsupported .npy version {v}"))),
    };
    let header = std::str::from_utf8(
        bytes
            .get(start..start + hlen)
            .ok_or_else(|| bad("truncated header"))?,
    )
    .map_err(|_| bad("header is not text"))?;
    let field = |key: &str| -> Option<&str> {
        let i = header.find(&format!("'{key}'"))?;
        let rest = &header[i + key.len() + 2..];
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr").ok_or_else(|| bad("no descr"))?;
    let descr = descr.trim_start_matches('\'');
    let descr = &descr[..descr.find('\'').ok_or_else(|| bad("bad descr"))?];
    if field("fortran_order").is_some_and(|f| f.starts_with("True")) {
        return Err(bad("Fortran-order arrays are not supported"));
    }
    let shape_text = field("shape").ok_or_else(|| bad("no shape"))?;
    let close = shape_text.find(')').ok_or_else(|| bad("bad shape"))?;
    let shape: Vec<usize> = shape_text[1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad("bad shape"))?;
    let n: usize = shape.iter().product();
    let body = &bytes[start + hlen..];
    let need = |size: usize| -> Result<&[u8], VerifyError> {
        body.get(..n * size)
            .ok_or_else(|| bad("data shorter than the shape"))
    };
    let data = match descr {
        "|b1" => ArrayData::Bool(need(1)?.iter().map(|&b| b != 0).collect()),
        "<i4" => ArrayData::I32(
            need(4)?
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().expect("4")))
                .collect(),
        ),
        "<i8" => ArrayData::I64(
            need(8)?
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8")))
                .collect(),
        ),
        "<f4" => ArrayData::F32(
            need(4)?
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4")))
                .collect(),
        ),
        "<f8" => ArrayData::F64(
            need(8)?
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8")))
                .collect(),
        ),
        "|i1" | "<i1" => ArrayData::I8(need(1)?.iter().map(|&b| b as i8).collect()),
        "|u1" | "<u1" => ArrayData::U8(need(1)?.to_vec()),
        "<i2" => ArrayData::I16(
            need(2)?
                .chunks_exact(2)
                .map(|c| i16::from_le_bytes(c.try_into().expect("2")))
                .collect(),
        ),
        "<u2" => ArrayData::U16(
            need(2)?
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes(c.try_into().expect("2")))
                .collect(),
        ),
        "<u4" => ArrayData::U32(
            need(4)?
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
                .collect(),
        ),
        "<c8" => ArrayData::C64(
            need(8)?
                .chunks_exact(8)
                .map(|c| {
                    [
                        f32::from_le_bytes(c[..4].try_into().expect("4")),
                        f32::from_le_bytes(c[4..].try_into().expect("4")),
                    ]
                })
                .collect(),
        ),
        "<c16" => ArrayData::C128(
            need(16)?
                .chunks_exact(16)
                .map(|c| {
                    [
                        f64::from_le_bytes(c[..8].try_into().expect("8")),
                        f64::from_le_bytes(c[8..].try_into().expect("8")),
                    ]
                })
                .collect(),
        ),
        "<u8" => ArrayData::U64(
            need(8)?
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
                .collect(),
        ),
        other => {
            return Err(bad(&format!(
                "dtype `{other}`: port compares bool, int8 to int64, uint8 to uint64, float32, float64, complex64 and complex128"
            )))
        }
    };
    Ok(NdArray { shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let dir = tempfile::tempdir().unwrap();
        for a in [
            NdArray {
                shape: vec![2, 3],
                data: ArrayData::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.5]),
            },
            NdArray {
                shape: vec![],
                data: ArrayData::I64(vec![7]),
            },
            NdArray {
                shape: vec![3],
                data: ArrayData::Bool(vec![true, false, true]),
            },
            NdArray {
                shape: vec![1],
                data: ArrayData::F32(vec![0.25]),
            },
            NdArray {
                shape: vec![2, 2],
                data: ArrayData::U8(vec![0, 255, 7, 128]),
            },
            NdArray {
                shape: vec![2],
                data: ArrayData::I8(vec![-128, 127]),
            },
            NdArray {
                shape: vec![2],
                data: ArrayData::C128(vec![[1.5, -2.0], [0.0, 1e-300]]),
            },
            NdArray {
                shape: vec![1, 1],
                data: ArrayData::C64(vec![[3.25, 0.5]]),
            },
            NdArray {
                shape: vec![2],
                data: ArrayData::I16(vec![-32768, 1000]),
            },
            NdArray {
                shape: vec![2],
                data: ArrayData::U16(vec![65535, 1]),
            },
            NdArray {
                shape: vec![1],
                data: ArrayData::U32(vec![0xDEAD_BEEF]),
            },
            NdArray {
                shape: vec![1],
                data: ArrayData::U64(vec![u64::MAX]),
            },
        ] {
            let p = dir.path().join("a.npy");
            write(&p, &a).unwrap();
            assert_eq!(read(&p).unwrap(), a);
        }
    }
}
