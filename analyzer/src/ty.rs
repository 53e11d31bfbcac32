//! What the classifier believes a value is.

/// What port believes a value is.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Unknown,
    NoneT,
    Bool,
    Int,
    Float,
    Complex,
    Str,
    Array {
        ndim: Option<u8>,
        dtype: Option<String>,
    },
    Tuple(Vec<Ty>),
    List,
    Dict,
    Set,
    Range,
    Module(String),
    LocalModule(usize),
    /// A function or constant of an external module, by dotted name.
    External(String),
    Builtin(String),
    AppFn(usize),
    Class(String),
    /// An instance of an app class.
    Instance(String),
    /// A value produced by a library nopython mode cannot type.
    Opaque(String),
    /// A lambda or a local function value.
    Func,
    /// An exception class (`ValueError`).
    ExceptionClass,
}

impl Ty {
    pub(crate) fn is_array(&self) -> bool {
        matches!(self, Ty::Array { .. })
    }
    pub(crate) fn array(ndim: Option<u8>) -> Ty {
        Ty::Array { ndim, dtype: None }
    }
    pub(crate) fn is_objectish(&self) -> bool {
        matches!(self, Ty::Instance(_) | Ty::Opaque(_))
    }
}
