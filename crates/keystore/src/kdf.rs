//! Argon2id parameters for our own files: defaults, the floor for new files, the cap for
//! files we read, and the derivation itself.

use bridgectl_secret::ExposeSecretMut;
use std::fmt;
use std::path::Path;

use crate::Error;
use crate::secret::{Passphrase, SecretBytes};

/// Largest Argon2id memory we agree to use when reading a file: 1 GiB.
pub const MAX_M_KIB: u32 = 1024 * 1024;
/// Largest Argon2id pass count we agree to run when reading a file.
pub const MAX_T: u32 = 16;
/// Largest Argon2id lane count we accept.
pub const MAX_P: u32 = 16;
/// OWASP minimum memory for new files: 19 MiB.
pub const MIN_M_KIB: u32 = 19 * 1024;
/// OWASP minimum passes for new files.
pub const MIN_T: u32 = 2;

/// Argon2id cost parameters (version 0x13, 32-byte output).
///
/// [`Default`] is RFC 9106's second recommended option: m = 64 MiB, t = 3, p = 4.
/// [`KdfParams::new`] refuses anything below the OWASP minimum (m = 19 MiB, t = 2) or
/// above the read caps; only [`KdfParams::insecure_for_tests`] makes cheaper ones, and a
/// file written with them says so in its parameters for anyone to see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfParams {
    m_kib: u32,
    t: u32,
    p: u32,
}

impl Default for KdfParams {
    fn default() -> Self {
        Self {
            m_kib: 64 * 1024,
            t: 3,
            p: 4,
        }
    }
}

impl fmt::Display for KdfParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "argon2id m={} KiB, t={}, p={}",
            self.m_kib, self.t, self.p
        )
    }
}

impl KdfParams {
    /// Parameters for new files: at least the OWASP minimum, at most the read caps.
    pub fn new(m_kib: u32, t: u32, p: u32) -> Result<Self, Error> {
        let params = Self { m_kib, t, p };
        if m_kib < MIN_M_KIB || t < MIN_T {
            return Err(Error::WeakKdf {
                found: params.to_string(),
                reason: format!("below the minimum m={MIN_M_KIB} KiB, t={MIN_T} for new key files"),
            });
        }
        params.check_cap(Path::new("<new key>"))?;
        params.check_valid()?;
        Ok(params)
    }

    /// Tiny parameters (m = 64 KiB, t = 1, p = 1) for tests, fixtures and the crash
    /// test only. A key written with these falls to a brute-force attack in seconds.
    pub fn insecure_for_tests() -> Self {
        Self {
            m_kib: 64,
            t: 1,
            p: 1,
        }
    }

    /// Memory in KiB.
    pub fn m_kib(&self) -> u32 {
        self.m_kib
    }

    /// Passes.
    pub fn t(&self) -> u32 {
        self.t
    }

    /// Lanes.
    pub fn p(&self) -> u32 {
        self.p
    }

    /// Parameters as read from a file, checked against the caps before anything runs.
    pub(crate) fn from_file(path: &Path, m_kib: u32, t: u32, p: u32) -> Result<Self, Error> {
        let params = Self { m_kib, t, p };
        params.check_cap(path)?;
        params.check_valid().map_err(|e| match e {
            Error::WeakKdf { reason, .. } => Error::malformed(path, format!("kdf: {reason}")),
            other => other,
        })?;
        Ok(params)
    }

    fn check_cap(&self, path: &Path) -> Result<(), Error> {
        if self.m_kib > MAX_M_KIB || self.t > MAX_T || self.p > MAX_P {
            return Err(Error::ExcessiveWork {
                path: path.to_owned(),
                found: self.to_string(),
                cap: format!("m<={MAX_M_KIB} KiB, t<={MAX_T}, p<={MAX_P}"),
            });
        }
        Ok(())
    }

    fn check_valid(&self) -> Result<(), Error> {
        self.argon2_params()
            .map(|_| ())
            .map_err(|e| Error::WeakKdf {
                found: self.to_string(),
                reason: e.to_string(),
            })
    }

    fn argon2_params(&self) -> Result<argon2::Params, argon2::Error> {
        argon2::Params::new(self.m_kib, self.t, self.p, Some(32))
    }

    /// Derives the 256-bit file key. Parameters were checked when `self` was built.
    pub(crate) fn derive(
        &self,
        path: &Path,
        passphrase: &Passphrase,
        salt: &[u8],
    ) -> Result<SecretBytes, Error> {
        let crypto = |e: argon2::Error| Error::Crypto {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let params = self.argon2_params().map_err(crypto)?;
        let argon =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut key = SecretBytes::default();
        // The lanes run on a pool of exactly `p` threads made for this derivation, not
        // on rayon's global pool, which starts one thread per CPU (64 on a large server)
        // for a file that asks for one lane, and keeps them for the process's life.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.p as usize)
            .build()
            .map_err(|e| Error::Crypto {
                path: path.to_owned(),
                reason: format!("cannot start the key derivation's threads: {e}"),
            })?;
        pool.install(|| {
            argon.hash_password_into(
                passphrase.expose_secret().as_bytes(),
                salt,
                key.expose_secret_mut(),
            )
        })
        .map_err(crypto)?;
        Ok(key)
    }
}

/// The KDF work a key file asks for, of either format, as parsed: what the read caps
/// ([`MAX_M_KIB`], [`MAX_T`], [`MAX_P`] and Web3 Secret Storage's) are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KdfCost {
    /// Our own format.
    Argon2id {
        /// Memory, KiB.
        m_kib: u32,
        /// Passes.
        t: u32,
        /// Lanes.
        p: u32,
    },
    /// Web3 Secret Storage, scrypt.
    Scrypt {
        /// N.
        n: u64,
        /// r.
        r: u32,
        /// p.
        p: u32,
    },
    /// Web3 Secret Storage, PBKDF2-HMAC-SHA256.
    Pbkdf2 {
        /// Iterations.
        c: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridgectl_secret::ExposeSecret;

    #[test]
    fn default_is_rfc9106_second_option() {
        let d = KdfParams::default();
        assert_eq!((d.m_kib(), d.t(), d.p()), (65536, 3, 4));
        assert_eq!(KdfParams::new(65536, 3, 4).expect("default is valid"), d);
    }

    #[test]
    fn below_owasp_is_refused_without_the_test_path() {
        for (m, t) in [(MIN_M_KIB - 1, 2), (MIN_M_KIB, 1), (64, 1)] {
            let err = KdfParams::new(m, t, 1).expect_err("weak params must be refused");
            assert_eq!(err.kind(), "weak_kdf", "{err}");
        }
        assert!(KdfParams::new(MIN_M_KIB, MIN_T, 1).is_ok());
    }

    #[test]
    fn above_cap_is_refused() {
        let err = KdfParams::new(MAX_M_KIB + 1, 3, 4).expect_err("over cap");
        assert_eq!(err.kind(), "excessive_work");
        let err = KdfParams::from_file(Path::new("f"), 65536, MAX_T + 1, 4).expect_err("over cap");
        assert_eq!(err.kind(), "excessive_work");
    }

    /// RFC 9106 §5.3 needs secret and associated data, which our format does not use;
    /// this checks the plain Argon2id path against the PHC reference instead:
    /// `$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc`.
    #[test]
    fn argon2id_matches_phc_reference() {
        let params = KdfParams {
            m_kib: 65536,
            t: 2,
            p: 1,
        };
        let key = params
            .derive(Path::new("kat"), &Passphrase::new("password"), b"somesalt")
            .expect("derive");
        assert_eq!(
            hex::encode(key.expose_secret()),
            "09316115d5cf24ed5a15a31a3ba326e5cf32edc24702987c02b6566f61913cf7"
        );
    }
}
