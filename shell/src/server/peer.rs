//! Which local account holds the other end of a loopback connection.
//!
//! Every account on the machine can connect to 127.0.0.1, and Headspace types into the
//! user's terminals, so without a token only the account that runs the server (or root) may
//! use it. Linux lists every TCP socket with its owner's uid in `/proc/net/tcp` and
//! `/proc/net/tcp6`; the client's socket is the one whose local address is our peer and whose
//! remote address is us. The kernel is asked for that one socket by netlink first
//! ([`sock_diag`]): the tables hold every socket on the machine, and reading them cost more
//! the more hooks had come (each leaves a TIME_WAIT socket behind).

use headspace_core::access::Peer;
use std::net::{IpAddr, SocketAddr};

mod sock_diag;

/// Who is at `peer`, the far end of a connection accepted on `local`.
pub fn identify(peer: SocketAddr, local: SocketAddr) -> Peer {
    if !is_loopback(peer.ip()) {
        return Peer::Remote;
    }
    let me = own_uid();
    match socket_owner(peer, local) {
        Some(uid) if uid == me || uid == 0 => Peer::SameUser,
        Some(uid) => Peer::OtherUser(uid),
        None => Peer::Unknown,
    }
}

/// The effective uid of this process.
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The uid owning the TCP socket bound to `addr` and connected to `remote`.
fn socket_owner(addr: SocketAddr, remote: SocketAddr) -> Option<u32> {
    if let Some(uid) = sock_diag::socket_owner(addr, remote) {
        return Some(uid);
    }
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            owner_in_table(&text, addr, remote)
        })
}

/// Looks `addr` → `remote` up in the text of a `/proc/net/tcp{,6}` table.
fn owner_in_table(text: &str, addr: SocketAddr, remote: SocketAddr) -> Option<u32> {
    text.lines().skip(1).find_map(|line| {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
        let f: Vec<&str> = line.split_whitespace().collect();
        let (local, rem, uid) = (f.get(1)?, f.get(2)?, f.get(7)?);
        (same_endpoint(local, addr) && same_endpoint(rem, remote))
            .then(|| uid.parse().ok())
            .flatten()
    })
}

/// Whether a table's `HEXIP:HEXPORT` is `addr` (an IPv4 address also matches its
/// IPv4-mapped IPv6 form, as a dual-stack listener sees it).
fn same_endpoint(field: &str, addr: SocketAddr) -> bool {
    let Some((ip, port)) = field.split_once(':') else {
        return false;
    };
    if u16::from_str_radix(port, 16).ok() != Some(addr.port()) {
        return false;
    }
    let Some(parsed) = parse_ip(ip) else {
        return false;
    };
    canonical(parsed) == canonical(addr.ip())
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The kernel prints addresses as 32-bit words in the host's byte order.
fn parse_ip(hex: &str) -> Option<IpAddr> {
    let word = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::to_ne_bytes);
    match hex.len() {
        8 => Some(IpAddr::V4(std::net::Ipv4Addr::from(word(hex)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(&hex[i * 8..i * 8 + 8])?);
            }
            Some(IpAddr::V6(std::net::Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_owner_of_a_loopback_client_socket() {
        // Two lines of a real /proc/net/tcp: the listener and a client 127.0.0.1:41170 → :5055.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:13BF 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n\
   1: 0100007F:A0D2 0100007F:13BF 01 00000000:00000000 00:00000000 00000000 65534        0 2 1 0 20 4 30 10 -1\n";
        let client: SocketAddr = "127.0.0.1:41170".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:5055".parse().unwrap();
        assert_eq!(owner_in_table(table, client, server), Some(65534));
        let other: SocketAddr = "127.0.0.1:41171".parse().unwrap();
        assert_eq!(owner_in_table(table, other, server), None);
    }

    #[test]
    fn ipv6_and_mapped_addresses() {
        // ::1 is 00000000000000000000000001000000 in the kernel's word order.
        assert_eq!(
            parse_ip("00000000000000000000000001000000"),
            Some("::1".parse().unwrap())
        );
        // ::ffff:127.0.0.1
        let mapped = parse_ip("0000000000000000FFFF00000100007F").unwrap();
        assert_eq!(canonical(mapped), "127.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn a_real_connection_of_this_process_is_its_own() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (_conn, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(identify(peer, local), Peer::SameUser);
        let remote: SocketAddr = "192.0.2.1:40000".parse().unwrap();
        assert_eq!(identify(remote, local), Peer::Remote);
    }
}
