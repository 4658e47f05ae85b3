#[derive(clap::Args)]
pub struct Opts {
    #[arg(long, add = crate::b::names())]
    pub name: String,
}

pub const DEFAULT: &str = "default";
