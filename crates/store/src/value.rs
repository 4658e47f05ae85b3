//! The values that cross the interface: what a parameter is bound as and what a column
//! is read as, the same on both backends. Four kinds are enough for the journal and
//! the signing log (integers, text, bytes and NULL); a boolean is an integer, as SQLite
//! has it, and a PostgreSQL `BOOLEAN` column reads as 0 or 1.

use crate::error::Error;

/// One parameter or column value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer (also a boolean: 0 or 1).
    Int(i64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Text(_) => "text",
            Value::Blob(_) => "bytes",
        }
    }
}

/// What can be bound as a parameter.
pub trait ToValue {
    /// The value bound.
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl ToValue for i64 {
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
}

impl ToValue for i32 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}

impl ToValue for u32 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

/// What a column can be read as.
pub trait FromValue: Sized {
    /// The column's value as `Self`, or why not.
    fn from_value(value: &Value) -> Result<Self, String>;
}

impl FromValue for Value {
    fn from_value(value: &Value) -> Result<Self, String> {
        Ok(value.clone())
    }
}

impl FromValue for i64 {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Int(i) => Ok(*i),
            // SQLite hands back what a TEXT column holds as text, even digits.
            Value::Text(t) => t
                .parse()
                .map_err(|_| format!("an integer, found text {t:?}")),
            other => Err(format!("an integer, found {}", other.kind())),
        }
    }
}

impl FromValue for u64 {
    fn from_value(value: &Value) -> Result<Self, String> {
        let i = i64::from_value(value)?;
        u64::try_from(i).map_err(|_| format!("a non-negative integer, found {i}"))
    }
}

impl FromValue for u32 {
    fn from_value(value: &Value) -> Result<Self, String> {
        let i = i64::from_value(value)?;
        u32::try_from(i).map_err(|_| format!("an integer of 32 bits, found {i}"))
    }
}

impl FromValue for usize {
    fn from_value(value: &Value) -> Result<Self, String> {
        let i = i64::from_value(value)?;
        usize::try_from(i).map_err(|_| format!("a non-negative integer, found {i}"))
    }
}

impl FromValue for bool {
    fn from_value(value: &Value) -> Result<Self, String> {
        Ok(i64::from_value(value)? != 0)
    }
}

impl FromValue for String {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Text(t) => Ok(t.clone()),
            Value::Int(i) => Ok(i.to_string()),
            other => Err(format!("text, found {}", other.kind())),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Blob(b) => Ok(b.clone()),
            other => Err(format!("bytes, found {}", other.kind())),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// One row of a result, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    values: Vec<Value>,
}

impl Row {
    pub(crate) fn new(values: Vec<Value>) -> Row {
        Row { values }
    }

    /// Column `index` (from 0) as `T`.
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T, Error> {
        let value = self.values.get(index).ok_or(Error::Column {
            index,
            reason: format!("the row has {} columns", self.values.len()),
        })?;
        T::from_value(value).map_err(|reason| Error::Column { index, reason })
    }

    /// How many columns the row has.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_read_from_text_as_sqlite_keeps_them_and_bounds_hold() {
        assert_eq!(i64::from_value(&Value::Text("42".into())), Ok(42));
        assert!(u64::from_value(&Value::Int(-1)).is_err());
        assert!(u32::from_value(&Value::Int(1 << 40)).is_err());
        assert_eq!(bool::from_value(&Value::Int(1)), Ok(true));
        assert_eq!(Option::<String>::from_value(&Value::Null), Ok(None));
        assert!(String::from_value(&Value::Blob(vec![1])).is_err());
    }

    #[test]
    fn a_missing_column_is_an_error_naming_it() {
        let row = Row::new(vec![Value::Int(1)]);
        let e = row.get::<i64>(3).expect_err("no column 3");
        assert!(e.to_string().contains("column 3"), "{e}");
    }
}
