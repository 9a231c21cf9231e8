//! Loading a declaration's OpenCL source: the crate's manifest directory, the file and its
//! include directories, flattened into one text whose lines map back to `file:line` for
//! messages.

use std::path::{Path, PathBuf};

use crate::errors::Errors;
use hetdsl_decl::flatten::{flatten_named, Flattened};

/// A flattened source and its line map.
pub(super) struct Loaded {
    pub(super) flat: Flattened,
    /// The flattened lines joined, as `clsig` reads them.
    pub(super) text: String,
    manifest: PathBuf,
}

impl Loaded {
    /// `file:line` of a 0-based flattened line, relative to the manifest directory.
    pub(super) fn at(&self, line: usize) -> String {
        match self.flat.lines.get(line) {
            Some((_, file, n)) => format!("{}:{n}", relative(file, &self.manifest)),
            None => "end of file".to_string(),
        }
    }
}

/// The directory of the `Cargo.toml` of the crate that holds the declaration: the nearest one
/// above the invoking source file, which is `CARGO_MANIFEST_DIR` for an ordinary crate and the
/// tested crate's for trybuild's generated one (whose manifest lies under `target/`).
fn manifest_dir() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let from_span = proc_macro::Span::call_site().local_file().and_then(|file| {
        let file = cwd.join(file);
        file.ancestors().skip(1).find(|d| d.join("Cargo.toml").is_file()).map(Path::to_path_buf)
    });
    from_span.or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

pub(super) fn load(
    file: &syn::LitStr,
    include: &[syn::LitStr],
    errors: &mut Errors,
) -> Option<Loaded> {
    let Some(manifest) = manifest_dir() else {
        errors
            .push(syn::Error::new(file.span(), "CARGO_MANIFEST_DIR is not set: build with cargo"));
        return None;
    };
    let path = manifest.join(file.value());
    if !path.is_file() {
        let msg = format!(
            "kernel source `{}` not found (the path is relative to the directory of the crate's Cargo.toml)",
            file.value()
        );
        errors.push(syn::Error::new(file.span(), msg));
        return None;
    }
    let dirs: Vec<PathBuf> = include.iter().map(|d| manifest.join(d.value())).collect();
    for (dir, lit) in dirs.iter().zip(include) {
        if !dir.is_dir() {
            errors.push(syn::Error::new(
                lit.span(),
                format!("include directory `{}` not found", lit.value()),
            ));
            return None;
        }
    }
    match flatten_named(&path, &dirs, Some(&manifest)) {
        Ok(flat) => {
            let text = flat.lines.iter().map(|(l, _, _)| l.as_str()).collect::<Vec<_>>().join("\n");
            Some(Loaded { flat, text, manifest })
        }
        Err(e) => {
            // ocl-include appends "\nin file \"<absolute path>\" at line <its count>" for each
            // including file: keep the files, relative to the crate.
            let base = format!("{}/", manifest.display());
            let text = e.to_string().replace(&base, "");
            let mut parts = text.split("\nin file ");
            let mut why = parts.next().unwrap_or_default().to_string();
            for including in parts {
                let file = including.split(" at line ").next().unwrap_or(including);
                why += &format!(", included from {}", file.trim_matches('"'));
            }
            errors.push(syn::Error::new(
                file.span(),
                format!("cannot read `{}`: {why}", file.value()),
            ));
            None
        }
    }
}
