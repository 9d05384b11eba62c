//! The owner of one TCP socket, asked of the kernel by its addresses (netlink `sock_diag`,
//! what `ss` uses): an exact lookup, so its cost does not grow with the sockets on the
//! machine. Reading `/proc/net/tcp` formats every socket, TIME_WAIT ones included, and a
//! hook per connection leaves tens of thousands of those at 1,000 hooks/s: that read was most
//! of the server's CPU time at that rate.

use std::net::{IpAddr, SocketAddr};

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `INET_DIAG_NOCOOKIE`: the lookup is by addresses, not by a socket cookie.
const NO_COOKIE: u32 = !0;
/// `struct nlmsghdr`.
const HEADER: usize = 16;
/// `struct inet_diag_req_v2`.
const REQUEST: usize = 56;
/// Where `idiag_uid` sits in `struct inet_diag_msg`: family, state, timer, retrans (4), the
/// socket id (48), expires, rqueue, wqueue (12).
const UID_AT: usize = 64;

/// The uid owning the TCP socket bound to `addr` and connected to `remote`; `None` when the
/// kernel does not answer (no such socket, or no `sock_diag`): the caller then reads the
/// `/proc` tables.
pub(super) fn socket_owner(addr: SocketAddr, remote: SocketAddr) -> Option<u32> {
    let (family, src, dst) = match (canonical(addr.ip()), canonical(remote.ip())) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (libc::AF_INET as u8, words4(a), words4(b)),
        (IpAddr::V6(a), IpAddr::V6(b)) => (libc::AF_INET6 as u8, words6(a), words6(b)),
        _ => return None,
    };
    let mut req = [0u8; HEADER + REQUEST];
    req[0..4].copy_from_slice(&((HEADER + REQUEST) as u32).to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence number
    let body = &mut req[HEADER..];
    body[0] = family;
    body[1] = libc::IPPROTO_TCP as u8;
    body[4..8].copy_from_slice(&u32::MAX.to_ne_bytes()); // every state
    let id = &mut body[8..];
    id[0..2].copy_from_slice(&addr.port().to_be_bytes());
    id[2..4].copy_from_slice(&remote.port().to_be_bytes());
    id[4..20].copy_from_slice(&src);
    id[20..36].copy_from_slice(&dst);
    id[40..44].copy_from_slice(&NO_COOKIE.to_ne_bytes());
    id[44..48].copy_from_slice(&NO_COOKIE.to_ne_bytes());
    let answer = ask(&req)?;
    let kind = u16::from_ne_bytes([answer[4], answer[5]]);
    if kind != SOCK_DIAG_BY_FAMILY || answer.len() < HEADER + UID_AT + 4 {
        return None; // NLMSG_ERROR: no such socket
    }
    let uid = &answer[HEADER + UID_AT..HEADER + UID_AT + 4];
    Some(u32::from_ne_bytes([uid[0], uid[1], uid[2], uid[3]]))
}

/// Sends one request on a new netlink socket and returns the first answer.
fn ask(req: &[u8]) -> Option<Vec<u8>> {
    // SAFETY: plain socket calls on a descriptor this function owns and closes; the buffers
    // outlive the calls and their lengths are passed with them.
    unsafe {
        let fd = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        );
        if fd < 0 {
            return None;
        }
        let mut kernel: libc::sockaddr_nl = std::mem::zeroed();
        kernel.nl_family = libc::AF_NETLINK as u16;
        let sent = libc::sendto(
            fd,
            req.as_ptr().cast(),
            req.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        );
        let mut buf = vec![0u8; 8192];
        let got = if sent == req.len() as isize {
            libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0)
        } else {
            -1
        };
        libc::close(fd);
        if got < HEADER as isize {
            return None;
        }
        buf.truncate(got as usize);
        Some(buf)
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// An address as the request's four 32-bit words (network order; IPv4 in the first).
fn words4(ip: std::net::Ipv4Addr) -> [u8; 16] {
    let mut w = [0u8; 16];
    w[..4].copy_from_slice(&ip.octets());
    w
}

fn words6(ip: std::net::Ipv6Addr) -> [u8; 16] {
    ip.octets()
}

#[cfg(test)]
mod tests {
    use super::socket_owner;

    #[test]
    fn the_kernel_names_the_owner_of_a_loopback_client_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(server).unwrap();
        let (_conn, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        // Where the kernel has no sock_diag the caller falls back to /proc: not a failure.
        if let Some(uid) = socket_owner(peer, server) {
            assert_eq!(uid, me);
        }
        let nobody: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(socket_owner(nobody, server), None);
    }
}
