package haproxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A killed HAProxy (the OOM killer, a crash, an operator's kill -9) takes
// its listening sockets with it: until the next master has bound them
// again, about 0.6 s at 10k routes, every new connection is refused. The
// supervisor therefore keeps its own copies of HAProxy's TCP listening
// sockets, fetched after every start and reload the way a new HAProxy
// fetches them from an old one (`_getsocks` over the admin socket, which
// the config declares with `expose-fd listeners`). While no HAProxy runs,
// the kernel goes on queueing connections on them; the next master is
// started with `-x` pointing at a socket where the supervisor hands them
// over in the same protocol, so it adopts them, and the queued connections
// are served instead of refused.
//
// The protocol, the same from 2.3 to 3.x (cli.c _getsocks, sock.c
// sock_get_old_sockets): the client writes "_getsocks\n"; the server
// answers the number of sockets as a native int, then sends them in
// batches of at most 253 (SCM_MAX_FD) with SCM_RIGHTS. Each socket's bytes
// are <len><netns name><len><interface name> and four zero bytes (once the
// listener options). The receiver acknowledges every batch with an int;
// the sender waits for it after each full batch.
//
// Only TCP listeners are kept. Unix ones (the admin socket, the TLS hop)
// are matched by path and are bound afresh anyway, and nothing outside
// the host connects to them.

// maxSendFD is HAProxy's MAX_SEND_FD, the kernel's SCM_MAX_FD.
const maxSendFD = 253

// getsocksTimeout bounds one exchange on either side.
const getsocksTimeout = 5 * time.Second

// keptSocket is one listening socket the supervisor holds.
type keptSocket struct {
	fd int
	// meta is its block of the protocol: <len><netns><len><iface><0000>.
	meta []byte
}

// keptListeners holds HAProxy's TCP listening sockets between a start or
// reload and the next. The zero value holds none.
type keptListeners struct {
	mu      sync.Mutex
	sockets []keptSocket
	// epoch counts releases: a fetch under way when the sockets are let
	// go (a stop) must not hold them again when it ends.
	epoch uint64
	// begun numbers the fetches as they begin (see begin).
	begun uint64
}

// begin numbers a fetch about to begin: what it fetches, or its failure,
// decides whether the sockets are held only while no later one has
// begun (releaseIfLatest).
func (k *keptListeners) begin() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.begun++
	return k.begun
}

// releaseIfLatest releases the sockets, as release does, when the fetch
// numbered ticket, which failed, is the last one begun: a later one,
// done or under way, holds them or decides. It reports whether it
// released them.
func (k *keptListeners) releaseIfLatest(ticket uint64) bool {
	k.mu.Lock()
	if k.begun != ticket {
		k.mu.Unlock()
		return false
	}
	k.dropLocked()
	return true
}

// count is how many sockets are held.
func (k *keptListeners) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.sockets)
}

// release closes every held socket. After a deliberate stop, or a master
// that did not come back, a port must refuse connections, not queue them
// for nobody.
func (k *keptListeners) release() {
	k.mu.Lock()
	k.dropLocked()
}

// dropLocked lets go of the held sockets; k.mu is held, and unlocked.
func (k *keptListeners) dropLocked() {
	old := k.sockets
	k.sockets = nil
	k.epoch++
	k.mu.Unlock()
	closeKept(old)
}

func closeKept(sockets []keptSocket) {
	for _, s := range sockets {
		_ = unix.Close(s.fd)
	}
}

// errReleased ends a fetch that the sockets were let go during.
var errReleased = errors.New("let go while being fetched")

// fetch asks the HAProxy behind admin socket path for its listening
// sockets and holds its TCP ones instead of those held so far, which are
// closed: a port the config no longer binds must not stay open with
// nobody to accept on it. cancelled, looked at once the epoch is read,
// says the caller no longer wants them (its HAProxy is being stopped).
func (k *keptListeners) fetch(path string, cancelled func() bool) (int, error) {
	k.mu.Lock()
	epoch := k.epoch
	k.mu.Unlock()
	if cancelled() {
		return 0, errReleased
	}
	sockets, err := getSockets(path)
	if err != nil {
		return 0, err
	}
	k.mu.Lock()
	if k.epoch != epoch {
		k.mu.Unlock()
		closeKept(sockets)
		return 0, errReleased
	}
	old := k.sockets
	k.sockets = sockets
	k.mu.Unlock()
	closeKept(old)
	return len(sockets), nil
}

// getSockets runs the client side of _getsocks against path and returns
// the TCP listening sockets among those received (the rest are closed).
func getSockets(path string) ([]keptSocket, error) {
	conn, err := net.DialTimeout("unix", path, getsocksTimeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(getsocksTimeout))
	if _, err := uc.Write([]byte("_getsocks\n")); err != nil {
		return nil, err
	}
	// The count comes alone, in a message without descriptors, so reading
	// exactly its four bytes cannot swallow a batch's rights.
	var count [4]byte
	if _, err := io.ReadFull(uc, count[:]); err != nil {
		if errors.Is(err, io.EOF) {
			// HAProxy closes without a word when the socket lacks
			// expose-fd listeners, or it has no socket to give.
			return nil, fmt.Errorf("_getsocks on %s: no sockets given (expose-fd listeners?)", path)
		}
		return nil, fmt.Errorf("_getsocks on %s: %w", path, err)
	}
	want := int(int32(binary.NativeEndian.Uint32(count[:])))
	if want < 0 || want > 1<<16 {
		return nil, fmt.Errorf("_getsocks on %s: nonsensical count %d", path, want)
	}
	var fds []int
	var meta []byte
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*maxSendFD))
	ack := make([]byte, 4)
	for len(fds) < want {
		// ReadMsgUnix receives with MSG_CMSG_CLOEXEC on Linux: a child
		// haroute starts (the reaper, haproxy -c) inherits none of them.
		n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			closeFDs(fds)
			return nil, fmt.Errorf("_getsocks on %s: got %d of %d sockets: %v", path, len(fds), want, err)
		}
		meta = append(meta, buf[:n]...)
		got, perr := rights(oob[:oobn])
		fds = append(fds, got...)
		if perr != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("_getsocks on %s: %w", path, perr)
		}
		if _, err := uc.Write(ack); err != nil && len(fds) < want {
			closeFDs(fds)
			return nil, fmt.Errorf("_getsocks on %s: %w", path, err)
		}
	}
	blocks, err := splitMeta(meta, len(fds))
	if err != nil {
		closeFDs(fds)
		return nil, fmt.Errorf("_getsocks on %s: %w", path, err)
	}
	var kept []keptSocket
	for i, fd := range fds {
		if isTCPListener(fd) {
			kept = append(kept, keptSocket{fd: fd, meta: blocks[i]})
		} else {
			_ = unix.Close(fd)
		}
	}
	return kept, nil
}

// rights returns the descriptors carried in a control message.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// splitMeta cuts the protocol bytes into each socket's block.
func splitMeta(b []byte, n int) ([][]byte, error) {
	blocks := make([][]byte, 0, n)
	off := 0
	for range n {
		start := off
		for range 2 { // the netns name, then the interface name
			if off >= len(b) || off+1+int(b[off]) > len(b) {
				return nil, errors.New("socket descriptions cut short")
			}
			off += 1 + int(b[off])
		}
		if off+4 > len(b) {
			return nil, errors.New("socket descriptions cut short")
		}
		off += 4
		blocks = append(blocks, b[start:off:off])
	}
	return blocks, nil
}

// isTCPListener reports whether fd is a listening IPv4 or IPv6 stream
// socket.
func isTCPListener(fd int) bool {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return false
	}
	switch sa.(type) {
	case *unix.SockaddrInet4, *unix.SockaddrInet6:
	default:
		return false
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || typ != unix.SOCK_STREAM {
		return false
	}
	listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	return err == nil && listening == 1
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// handOver serves the held sockets at path, in the server side of
// _getsocks, until the returned stop is called (which also removes path).
// The directory of path must be private: whoever connects gets the ports.
func (k *keptListeners) handOver(path string) (stop func(), err error) {
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			k.serveGetsocks(c)
		}
	}()
	return func() {
		ln.Close()
		wg.Wait()
	}, nil
}

// serveGetsocks answers one _getsocks request on c with the held sockets.
func (k *keptListeners) serveGetsocks(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(getsocksTimeout))
	// ReadSlice, bounded by the reader's 64 bytes, where ReadString
	// would grow with whatever a peer sends without a newline.
	line, err := bufio.NewReaderSize(c, 64).ReadSlice('\n')
	if err != nil || string(line) != "_getsocks\n" {
		return
	}
	// Held while sending: a fetch after a reload closes the ones it
	// replaces only once they are handed over (dup'ed into the message).
	k.mu.Lock()
	defer k.mu.Unlock()
	var count [4]byte
	binary.NativeEndian.PutUint32(count[:], uint32(len(k.sockets)))
	if _, err := c.Write(count[:]); err != nil || len(k.sockets) == 0 {
		return
	}
	ack := make([]byte, 4)
	for start := 0; start < len(k.sockets); start += maxSendFD {
		batch := k.sockets[start:min(start+maxSendFD, len(k.sockets))]
		var meta []byte
		fds := make([]int, 0, len(batch))
		for _, s := range batch {
			meta = append(meta, s.meta...)
			fds = append(fds, s.fd)
		}
		if _, _, err := c.WriteMsgUnix(meta, unix.UnixRights(fds...), nil); err != nil {
			return
		}
		// Every batch is acknowledged; HAProxy's own sender waits only
		// after full ones. Waiting for the last too keeps the receiver
		// from writing its ack to a closed socket.
		if _, err := io.ReadFull(c, ack); err != nil {
			return
		}
	}
}

// OwnListeners returns the inodes of the listening sockets this run dir's
// HAProxy holds (its master and workers, found through the pid file) and
// of those the supervisor keeps. A listener that new settings move to
// another address of the same port (127.0.0.1 to 0.0.0.0) cannot be bound
// beside them; told apart from another process's, the move is left to the
// reload, where HAProxy pauses the old listeners while it binds the new.
func (s *Supervisor) OwnListeners() map[uint64]bool {
	own := map[uint64]bool{}
	s.kept.mu.Lock()
	for _, k := range s.kept.sockets {
		var st unix.Stat_t
		if unix.Fstat(k.fd, &st) == nil {
			own[st.Ino] = true
		}
	}
	s.kept.mu.Unlock()
	master := s.pidFileMaster()
	if master <= 0 {
		return own
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", master)); err != nil || !s.isOurs(cmdline) {
		return own
	}
	for _, pid := range withWorkers(master) {
		socketInodes(pid, own)
	}
	return own
}

// socketInodes adds the inodes of pid's sockets to into.
func socketInodes(pid int, into map[uint64]bool) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		inode, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(inode, "]"), 10, 64); err == nil {
			into[n] = true
		}
	}
}
