//! How far the rebuilding of a message from its frames has come: what an
//! [`crate::Assembler`] reports, and what an incomplete read says.

/// How far the rebuilding of a message is: the parts (fragments) of the message known so
/// far, and the frames read. The two differ: a fountain part mixes several fragments and
/// may tell none of them until other frames come (`0 of 7 parts, from 1 frame`).
///
/// Its `Display` is that line: `4 of 7 parts, from 6 frames`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Parts of the message known so far (read as they are, or solved from fountain
    /// parts).
    pub solved: usize,
    /// The parts the message has (0 before the first frame).
    pub needed: usize,
    /// Distinct frames read (a fragment or a fountain part each; duplicates not counted).
    pub frames: usize,
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} parts, from {} frame{}",
            self.solved,
            self.needed,
            self.frames,
            if self.frames == 1 { "" } else { "s" }
        )
    }
}
