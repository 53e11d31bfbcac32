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
