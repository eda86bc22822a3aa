//! CDX index lines: `urlkey timestamp original mimetype statuscode digest ...`, or the
//! columns a ` CDX` legend line names (`a` original URL, `s` status, `k` digest, `m` type).

/// One capture.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Capture<'a> {
    pub(crate) url: &'a str,
    pub(crate) status: &'a str,
    pub(crate) digest: &'a str,
}

/// Where the fields are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Columns {
    url: usize,
    status: usize,
    digest: usize,
}

impl Default for Columns {
    fn default() -> Self {
        Self {
            url: 2,
            status: 4,
            digest: 5,
        }
    }
}

impl Columns {
    /// The columns a legend line (` CDX N b a m s k ...`) names.
    pub(crate) fn from_legend(line: &str) -> Result<Self, String> {
        let letters: Vec<&str> = line.split_whitespace().skip(1).collect();
        let at = |l: &str| {
            letters
                .iter()
                .position(|x| *x == l)
                .ok_or_else(|| format!("the CDX legend has no `{l}` column"))
        };
        Ok(Self {
            url: at("a")?,
            status: at("s")?,
            digest: at("k")?,
        })
    }

    /// The capture on `line`.
    pub(crate) fn capture<'a>(&self, line: &'a str) -> Result<Capture<'a>, String> {
        let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
        let need = self.url.max(self.status).max(self.digest) + 1;
        if fields.len() < need {
            return Err(format!(
                "{} fields where at least {need} are needed",
                fields.len()
            ));
        }
        Ok(Capture {
            url: fields[self.url],
            status: fields[self.status],
            digest: fields[self.digest],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_legend_columns() {
        let line = "com,example)/ 20240101000000 https://example.com/ text/html 200 ABCDEF - - 123 0 x.warc.gz";
        let c = Columns::default().capture(line).unwrap();
        assert_eq!(
            (c.url, c.status, c.digest),
            ("https://example.com/", "200", "ABCDEF")
        );
        let legend = Columns::from_legend(" CDX N b a m s k r M S V g").unwrap();
        assert_eq!(legend.capture(line).unwrap(), c);
        assert!(Columns::from_legend(" CDX N b m s").is_err());
        assert!(Columns::default().capture("a b c").is_err());
    }
}
