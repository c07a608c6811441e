//! The terminal of the live view: raw mode (keys arrive one by one, unechoed), the
//! alternate screen, redrawn in place; all restored when the view ends. Keys are
//! read on a thread of their own (a blocking read of stdin) and sent to the view.

use std::io::Write;

use tokio::sync::mpsc;

/// A key that means something to the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Char(char),
    Enter,
    Backspace,
    Escape,
    /// Ctrl-C: raw mode turns it into a byte instead of a signal.
    Interrupt,
}

/// The terminal in raw mode on the alternate screen, until dropped.
pub(super) struct Screen {
    saved: libc::termios,
}

impl Screen {
    /// Enters raw mode and the alternate screen; `Err` when stdin is not a terminal.
    pub fn open() -> std::io::Result<Screen> {
        // SAFETY: tcgetattr/tcsetattr on fd 0 with a termios they fill or read.
        let saved = unsafe {
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut raw = saved;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
            raw.c_iflag &= !(libc::IXON | libc::ICRNL);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(0, libc::TCSAFLUSH, &raw) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            saved
        };
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?1049h\x1b[?25l");
        let _ = out.flush();
        Ok(Screen { saved })
    }

    /// The terminal's rows and columns (24 x 80 when it does not say).
    pub fn size() -> (usize, usize) {
        // SAFETY: TIOCGWINSZ fills a winsize.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut size) } == 0 && size.ws_row > 0 && size.ws_col > 0;
        if ok { (size.ws_row as usize, size.ws_col as usize) } else { (24, 80) }
    }

    /// Draws `lines` from the top left, each cut to the width, as many as fit.
    pub fn draw(&self, lines: &[String]) {
        let (rows, cols) = Self::size();
        let mut frame = String::from("\x1b[H");
        for (i, line) in lines.iter().take(rows).enumerate() {
            if i > 0 {
                frame.push_str("\r\n");
            }
            frame.extend(line.chars().take(cols));
            frame.push_str("\x1b[K");
        }
        frame.push_str("\x1b[J");
        let mut out = std::io::stdout();
        let _ = out.write_all(frame.as_bytes());
        let _ = out.flush();
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l");
        let _ = out.flush();
        // SAFETY: restores the settings read in open().
        unsafe { libc::tcsetattr(0, libc::TCSAFLUSH, &self.saved) };
    }
}

/// Keys from stdin, read on their own thread (it ends with the process).
pub(super) fn keys() -> mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: reads into a buffer of that length.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return;
            }
            for key in parse(&buf[..n as usize]) {
                if tx.send(key).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The keys in what one read gave: an escape sequence (an arrow key, say) means
/// nothing here and is skipped; an Esc not followed by `[` or `O` is Esc.
fn parse(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut rest = bytes;
    while let Some((&first, after)) = rest.split_first() {
        if first != 0x1b {
            let end = after.iter().position(|&b| b == 0x1b).map_or(rest.len(), |at| at + 1);
            keys.extend(String::from_utf8_lossy(&rest[..end]).chars().filter_map(key_of));
            rest = &rest[end..];
            continue;
        }
        match after.first() {
            Some(b'[') | Some(b'O') => {
                // CSI/SS3: parameters, then a final byte in @..~.
                let end = after[1..].iter().position(|b| (0x40..=0x7e).contains(b)).map_or(after.len(), |at| at + 2);
                rest = &after[end..];
            }
            _ => {
                keys.push(Key::Escape);
                rest = after;
            }
        }
    }
    keys
}

fn key_of(c: char) -> Option<Key> {
    match c {
        '\r' | '\n' => Some(Key::Enter),
        '\x7f' | '\x08' => Some(Key::Backspace),
        '\x03' => Some(Key::Interrupt),
        c if !c.is_control() => Some(Key::Char(c)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_skipped_and_esc_alone_is_a_key() {
        assert_eq!(parse(b"\x1bq"), [Key::Escape, Key::Char('q')]);
        assert_eq!(parse(b"\x1b[Aq"), [Key::Char('q')]);
        assert_eq!(parse(b"/ab\r"), [Key::Char('/'), Key::Char('a'), Key::Char('b'), Key::Enter]);
        assert_eq!(parse(b"\x1b"), [Key::Escape]);
        assert_eq!(parse(b"\x03"), [Key::Interrupt]);
    }
}
