//! Tokens of OpenCL C, enough to read declarations: identifiers, numbers, punctuation. The
//! scanner here splits the text into tokens and preprocessor directives (comments vanish;
//! string and character literals stay as one token each); the preprocessor module then runs
//! the directives as the OpenCL compiler does. [`tokens`] does both.

use std::collections::HashMap;

use super::{preproc, ParseError};

/// One token and the 0-based line of the flattened source it came from (for a macro's
/// expansion, the line where the macro was used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tok {
    pub kind: Kind,
    pub line: usize,
    /// No space between this token and the one before it on the line (tells `F(x)` from
    /// `F (x)` in a `#define`, and `&&` from `& &`).
    pub glued: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Ident(String),
    Number(String),
    Punct(char),
}

impl Tok {
    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(s) => Some(s),
            _ => None,
        }
    }
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }
    pub fn text(&self) -> String {
        match &self.kind {
            Kind::Ident(s) | Kind::Number(s) => s.clone(),
            Kind::Punct(c) => c.to_string(),
        }
    }
}

/// The macros OpenCL C defines with the same value on every device (OpenCL C 1.2 §6.12.2 and
/// §6.12.3): integer limits, `CHAR_BIT`, the float parameters and constants.
const SPEC_MACROS: [(&str, &str); 41] = [
    ("CHAR_BIT", "8"),
    ("SCHAR_MAX", "127"),
    ("SCHAR_MIN", "(-127-1)"),
    ("CHAR_MAX", "127"),
    ("CHAR_MIN", "(-127-1)"),
    ("UCHAR_MAX", "255"),
    ("SHRT_MAX", "32767"),
    ("SHRT_MIN", "(-32767-1)"),
    ("USHRT_MAX", "65535"),
    ("INT_MAX", "2147483647"),
    ("INT_MIN", "(-2147483647-1)"),
    ("UINT_MAX", "0xffffffff"),
    ("ULONG_MAX", "0xffffffffffffffffUL"),
    ("LONG_MAX", "0x7fffffffffffffffL"),
    ("LONG_MIN", "(-0x7fffffffffffffffL-1)"),
    ("FLT_DIG", "6"),
    ("FLT_MANT_DIG", "24"),
    ("FLT_MAX_10_EXP", "+38"),
    ("FLT_MAX_EXP", "+128"),
    ("FLT_MIN_10_EXP", "-37"),
    ("FLT_MIN_EXP", "-125"),
    ("FLT_RADIX", "2"),
    ("FLT_MAX", "340282346638528859811704183484516925440.0f"),
    ("FLT_MIN", "1.175494350822287507969e-38f"),
    ("FLT_EPSILON", "1.1920928955078125e-7f"),
    ("DBL_DIG", "15"),
    ("DBL_MANT_DIG", "53"),
    ("DBL_MAX_10_EXP", "+308"),
    ("DBL_MAX_EXP", "+1024"),
    ("DBL_MIN_10_EXP", "-307"),
    ("DBL_MIN_EXP", "-1021"),
    ("M_E_F", "2.71828174591064f"),
    ("M_LOG2E_F", "1.44269502162933f"),
    ("M_LN2_F", "0.693147182464600f"),
    ("M_PI_F", "3.14159274101257f"),
    ("M_PI_2_F", "1.57079637050629f"),
    ("M_SQRT2_F", "1.41421353816986f"),
    ("M_E", "2.718281828459045090796"),
    ("M_LN2", "0.693147180559945286227"),
    ("M_PI", "3.141592653589793115998"),
    ("M_SQRT2", "1.414213562373095145475"),
];

/// Tokenize `text` and run the preprocessor over it, in source order (a macro applies from its
/// `#define` to its `#undef`), with `defines` (name, value) in force from the start as `-D`
/// options put them.
pub fn tokens(text: &str, defines: &[(String, String)]) -> Result<Vec<Tok>, ParseError> {
    let predefined = predefined(defines)?;
    preproc::expand(scan(text)?, predefined)
}

/// The object-like macros in force before the first line: OpenCL C's own whose values the
/// specification fixes, then `defines` (which may override them, as the compiler lets them).
pub(super) fn predefined(
    defines: &[(String, String)],
) -> Result<HashMap<String, Vec<Tok>>, ParseError> {
    let mut predefined = HashMap::new();
    let fixed = SPEC_MACROS.iter().map(|(n, v)| (n.to_string(), v.to_string()));
    for (name, value) in fixed.chain(defines.iter().cloned()) {
        let body = scan(&value)?
            .into_iter()
            .filter_map(|r| match r {
                Raw::Tok(t) => Some(Tok { line: 0, ..t }),
                Raw::Directive(..) => None,
            })
            .collect();
        predefined.insert(name, body);
    }
    Ok(predefined)
}

/// A token or a directive (its tokens after the `#`, and the line of the `#`).
pub(super) enum Raw {
    Tok(Tok),
    Directive(Vec<Tok>, usize),
}

/// The length of the line splice at `i`, if there is one: a backslash, the spaces or tabs
/// compilers allow after it (with a warning), and the newline.
fn splice(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i) != Some(&'\\') {
        return None;
    }
    let blanks = chars[i + 1..].iter().take_while(|c| matches!(c, ' ' | '\t' | '\r')).count();
    (chars.get(i + 1 + blanks) == Some(&'\n')).then_some(blanks + 2)
}

/// Splits `text` into tokens and directives, joining backslash-continued lines.
pub(super) fn scan(text: &str) -> Result<Vec<Raw>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut directive: Option<(Vec<Tok>, usize)> = None;
    let mut line = 0usize;
    let mut at_line_start = true;
    let mut glued = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // A backslash-newline joins lines (inside directives, mostly).
        if let Some(n) = splice(&chars, i) {
            line += 1;
            i += n;
            glued = false;
            continue;
        }
        if c == '\n' {
            if let Some((d, at)) = directive.take() {
                out.push(Raw::Directive(d, at));
            }
            line += 1;
            at_line_start = true;
            glued = false;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            glued = false;
            continue;
        }
        if c == '/' && matches!(chars.get(i + 1), Some('/' | '*')) {
            glued = false;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            // Lines are joined before comments end: a `//` comment whose line ends in `\`
            // goes on over the next line, as the compiler reads it.
            while i < chars.len() && chars[i] != '\n' {
                match splice(&chars, i) {
                    Some(n) => {
                        line += 1;
                        i += n;
                    }
                    None => i += 1,
                }
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            skip_block_comment(&chars, &mut i, &mut line)?;
            continue;
        }
        let first_on_line = at_line_start;
        at_line_start = false;
        if c == '#' && first_on_line && directive.is_none() {
            directive = Some((Vec::new(), line));
            i += 1;
            glued = false;
            continue;
        }
        let tok_glued = std::mem::replace(&mut glued, true);
        let kind = token_kind(&chars, &mut i, line)?;
        let tok = Tok { kind, line, glued: tok_glued };
        match directive.as_mut() {
            Some((d, _)) => d.push(tok),
            None => out.push(Raw::Tok(tok)),
        }
    }
    if let Some((d, at)) = directive.take() {
        out.push(Raw::Directive(d, at));
    }
    Ok(out)
}

/// Skips a `/* .. */` comment starting at `chars[*i]`, counting the lines it spans.
fn skip_block_comment(chars: &[char], i: &mut usize, line: &mut usize) -> Result<(), ParseError> {
    let start = *line;
    *i += 2;
    loop {
        match chars.get(*i) {
            None => return Err(ParseError::new(start, "unterminated `/*` comment")),
            Some('*') if chars.get(*i + 1) == Some(&'/') => {
                *i += 2;
                return Ok(());
            }
            Some('\n') => *line += 1,
            _ => {}
        }
        *i += 1;
    }
}

/// Reads the token starting at `chars[*i]` (not a space nor a comment), moving `*i` past it.
fn token_kind(chars: &[char], i: &mut usize, line: usize) -> Result<Kind, ParseError> {
    let c = chars[*i];
    let from = *i;
    let mut end = from + 1;
    let kind = if c == '"' || c == '\'' {
        // A literal is one token, kept as written (`extern "C"`, messages of `#error`).
        loop {
            match chars.get(end) {
                None | Some('\n') => {
                    return Err(ParseError::new(line, "unterminated literal"));
                }
                Some('\\') => end += 2,
                Some(&q) if q == c => {
                    end += 1;
                    break;
                }
                _ => end += 1,
            }
        }
        Kind::Number(chars[from..end.min(chars.len())].iter().collect())
    } else if c.is_ascii_alphabetic() || c == '_' {
        end = from;
        while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_') {
            end += 1;
        }
        Kind::Ident(chars[from..end].iter().collect())
    } else if c.is_ascii_digit()
        || (c == '.' && chars.get(from + 1).is_some_and(|d| d.is_ascii_digit()))
    {
        end = from;
        while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '.') {
            end += 1;
        }
        Kind::Number(chars[from..end].iter().collect())
    } else {
        Kind::Punct(c)
    };
    *i = end;
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokens(text, &[]).unwrap().iter().map(Tok::text).collect()
    }

    #[test]
    fn comments_and_literals_vanish() {
        assert_eq!(words("a /* x \n y */ b // c\n \"s;{\" d"), ["a", "b", "\"s;{\"", "d"]);
    }

    #[test]
    fn defines_expand_from_definition_until_undef() {
        let text = "REAL\n#define REAL float\nREAL x;\n#undef REAL\nREAL";
        assert_eq!(words(text), ["REAL", "float", "x", ";", "REAL"]);
    }

    #[test]
    fn nested_and_self_referencing_defines_terminate() {
        assert_eq!(words("#define A B A\n#define B int\nA"), ["int", "A"]);
    }

    #[test]
    fn continued_directive_lines_and_function_macros() {
        let text = "#define T \\\n unsigned int\n#define F(x) x\nT F(y) F";
        assert_eq!(words(text), ["unsigned", "int", "y", "F"]);
    }

    #[test]
    fn lines_are_kept_for_expansions() {
        let t = tokens("#define T float\n\nT", &[]).unwrap();
        assert_eq!(t[0].line, 2);
    }

    #[test]
    fn exponential_expansion_is_refused() {
        let mut text = String::from("#define A0 x x\n");
        for i in 1..40 {
            text += &format!("#define A{i} A{} A{}\n", i - 1, i - 1);
        }
        text += "A39";
        assert!(tokens(&text, &[]).is_err());
    }

    #[test]
    fn exponential_empty_expansion_and_deep_chains_are_refused() {
        let mut text = String::from("#define A0\n");
        for i in 1..40 {
            text += &format!("#define A{i} A{} A{}\n", i - 1, i - 1);
        }
        assert!(tokens(&(text + "A39"), &[]).is_err());
        let mut chain = String::from("#define B0 int\n");
        for i in 1..1000 {
            chain += &format!("#define B{i} B{}\n", i - 1);
        }
        assert!(tokens(&(chain + "B999"), &[]).is_err());
    }

    #[test]
    fn unterminated_comment_is_an_error() {
        assert!(tokens("a /* b", &[]).is_err());
    }
}
