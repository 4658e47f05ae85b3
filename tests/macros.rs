/// Defines a test that gets a fresh [`crate::util::Dir`] and a ready
/// [`crate::util::TestCommand`] running `bridgectl` inside it.
///
/// ```ignore
/// bctest!(lists_nothing, |dir: Dir, mut cmd: TestCommand| {
///     cmd.args(["key", "list"]);
///     assert_eq!(cmd.stdout(), "");
/// });
/// ```
macro_rules! bctest {
    ($name:ident, $fun:expr) => {
        #[test]
        fn $name() {
            let dir = crate::util::Dir::new(stringify!($name));
            let cmd = dir.command();
            #[allow(clippy::redundant_closure_call)]
            ($fun)(dir, cmd);
        }
    };
}
