//! How port's own stdout looks: colour only on a terminal that wants it,
//! and tables as wide as the terminal, or as `$COLUMNS` (else 100 columns)
//! when stdout is a pipe or a file.

use std::io::IsTerminal;

use port_reports::terminal::Style;

/// Width of tables when stdout is not a terminal and `$COLUMNS` is unset.
pub const PIPE_WIDTH: u16 = 100;

/// The narrowest width port draws to (below it, cells would be a few
/// characters wide).
const MIN_WIDTH: u16 = 40;

/// The style for tables printed on stdout (`to_stdout`) or into a file.
pub fn style(to_stdout: bool) -> Style {
    let tty = to_stdout && std::io::stdout().is_terminal();
    Style {
        color: tty && std::env::var_os("NO_COLOR").is_none(),
        width: Some(width(tty.then(terminal_columns).flatten())),
    }
}

/// The terminal's width if there is one, else `$COLUMNS`, else
/// [`PIPE_WIDTH`]; never below 40.
fn width(terminal: Option<u16>) -> u16 {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok());
    width_from(terminal, columns)
}

fn width_from(terminal: Option<u16>, columns: Option<u16>) -> u16 {
    terminal
        .filter(|&w| w > 0)
        .or(columns.filter(|&w| w > 0))
        .unwrap_or(PIPE_WIDTH)
        .max(MIN_WIDTH)
}

/// Columns of the terminal on stdout (TIOCGWINSZ).
fn terminal_columns() -> Option<u16> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ only writes a winsize into the struct we own; on
    // failure (not a terminal) it returns -1 and we ignore the struct.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(ws.ws_col)
}

/// A spinner on stderr for work that may be long: drawn only on a terminal,
/// not with `--json`, and only once the work has taken `after` (a quick
/// verification prints nothing). Its message says what is being done, and
/// the elapsed time counts from the start.
pub fn spinner_after(json: bool, after: std::time::Duration) -> Option<indicatif::ProgressBar> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"),
    );
    let shown = bar.clone();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        if !shown.is_finished() {
            shown.set_draw_target(ProgressDrawTarget::stderr());
            shown.enable_steady_tick(std::time::Duration::from_millis(100));
        }
    });
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_wins_then_columns_then_100() {
        assert_eq!(width_from(Some(132), Some(80)), 132);
        assert_eq!(width_from(None, Some(80)), 80);
        assert_eq!(width_from(None, None), PIPE_WIDTH);
        assert_eq!(width_from(Some(0), Some(0)), PIPE_WIDTH);
        assert_eq!(width_from(None, Some(12)), MIN_WIDTH);
    }
}
