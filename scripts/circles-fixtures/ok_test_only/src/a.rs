/// Not [`crate::b::check`]: a doc link is not a dependency.
pub const LIMIT: u32 = 3;

pub const HELP: &str = "see crate::b::check";

#[cfg(test)]
mod tests {
    #[test]
    fn checks() {
        crate::b::check(1);
    }
}
