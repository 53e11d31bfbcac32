//! Words the formats share.

/// `n` and the noun, singular for one: "1 file", "3 files".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
