//! Every text colour of the dashboard reads at WCAG AA (4.5:1 or better) on every background
//! of its theme, light and dark: read from `static/app.css` itself, so a colour changed there
//! is checked here. Every `color:` in the file names one of the checked colours.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Colours used for text.
const TEXT: [&str; 8] = [
    "--text",
    "--muted",
    "--accent",
    "--idle",
    "--working",
    "--waiting",
    "--done",
    "--ended",
];
/// Colours text sits on.
const BACKGROUNDS: [&str; 5] = ["--bg", "--panel", "--user", "--agent", "--code-bg"];

fn css() -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../static/app.css"))
        .unwrap()
}

/// The custom properties set in the first block that `selector` opens.
fn theme(css: &str, selector: &str) -> BTreeMap<String, String> {
    let start = css
        .find(selector)
        .unwrap_or_else(|| panic!("no {selector}"));
    let body = &css[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.split(';')
        .filter_map(|decl| {
            let (k, v) = decl.split_once(':')?;
            let k = k.trim();
            k.starts_with("--")
                .then(|| (k.to_string(), v.trim().to_string()))
        })
        .collect()
}

fn luminance(hex: &str) -> f64 {
    let h = hex.trim_start_matches('#');
    assert_eq!(h.len(), 6, "a #rrggbb colour: {hex}");
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&h[i..i + 2], 16).unwrap()) / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
}

fn contrast(a: &str, b: &str) -> f64 {
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

#[test]
fn every_text_colour_pair_in_both_themes_is_at_least_4_5_to_1() {
    let css = css();
    let light = theme(&css, ":root {");
    let dark = theme(&css, "[data-theme=\"dark\"] {");
    let system_dark = theme(&css, ":root:not([data-theme=\"light\"]) {");
    for var in TEXT.iter().chain(BACKGROUNDS.iter()) {
        assert_eq!(
            dark.get(*var),
            system_dark.get(*var),
            "{var}: the system's dark theme is the dark theme"
        );
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, colours) in [("light", &light), ("dark", &dark)] {
        for fg in TEXT {
            for bg in BACKGROUNDS {
                let (f, b) = (&colours[fg], &colours[bg]);
                let ratio = contrast(f, b);
                checked += 1;
                if ratio < 4.5 {
                    failures.push(format!("{name}: {fg} {f} on {bg} {b} is {ratio:.2}:1"));
                }
            }
        }
    }
    assert_eq!(checked, 2 * TEXT.len() * BACKGROUNDS.len());
    assert!(failures.is_empty(), "below 4.5:1:\n{}", failures.join("\n"));
}

#[test]
fn every_text_colour_in_the_stylesheet_is_a_checked_one() {
    let css = css();
    let mut unchecked = Vec::new();
    for (i, _) in css.match_indices("color:") {
        // `background-color:`, `border-color:` and `--…-color:` are not text colours.
        let before = &css[..i];
        if before.ends_with('-') {
            continue;
        }
        let value = css[i + 6..].split([';', '}']).next().unwrap().trim();
        let ok = value == "inherit"
            || value == "var(--state)" // one of the state colours, by [data-shown]
            || TEXT.iter().any(|t| value == format!("var({t})"));
        if !ok {
            unchecked.push(value.to_string());
        }
    }
    assert!(
        unchecked.is_empty(),
        "text colours not checked: {unchecked:?}"
    );
    for shown in ["idle", "working", "waiting", "done", "ended"] {
        assert!(
            css.contains(&format!(
                "[data-shown=\"{shown}\"] {{ --state: var(--{shown}); }}"
            )),
            "--state for {shown} is the checked --{shown}"
        );
    }
}
