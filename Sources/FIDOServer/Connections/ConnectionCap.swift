import FIDOServerCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// The caps on connections open at once: ``maximum`` in all (``ConnectionBudget/maximumConnections``) and
/// ``perAddress`` for one client address (an IPv6 client by its prefix, keyed as the rate limit keys it).
///
/// Why two caps, and why make room rather than refuse: connections are not requests, so the rate limit never sees
/// one that sends nothing, and with a global cap alone one address that holds every place shuts everyone else out.
/// So one address holds at most ``perAddress`` connections; past that its newcomer takes the place of that address's
/// own connection that has been idle longest. At the global cap a newcomer takes the place of the longest-idle
/// connection of the address that holds the most. When no connection is idle (every one is mid-request, each bounded
/// by the request deadline), the cap is shared fairly: a newcomer from an address that holds less than its fair
/// share (``maximum`` divided by the addresses holding connections, the newcomer's included) takes the place of a
/// connection of the address that holds the most, when that address holds more than its share, even mid-request:
/// otherwise a few addresses keeping requests in progress would hold every place. Only then is the newcomer closed on
/// arrival, before its TLS handshake. A trusted proxy's connections carry many clients: they are held to the global
/// cap only, and never closed mid-request for another address.
///
/// A connection is idle from its accept (before its handshake) and between an answer's end and the next request's
/// head; an idle connection closed here loses no request.
final class ConnectionCap: Sendable {
    let maximum: Int
    let perAddress: Int
    private let state = NIOLockedValueBox(State())
    private let onRefusal: @Sendable () -> Void
    private let onEviction: @Sendable () -> Void
    private let onCount: @Sendable (Int) -> Void

    private struct Entry {
        let channel: any Channel
        /// Since when no request is in progress; nil while one is.
        var idleSince: NIODeadline?
        /// False for a trusted proxy's connection.
        var limited = true
    }

    private struct State {
        var open = 0
        var byAddress: [String: [ObjectIdentifier: Entry]] = [:]

        func longestIdle(of address: String) -> (ObjectIdentifier, Entry)? {
            byAddress[address]?.filter { $0.value.idleSince != nil }.min { $0.value.idleSince! < $1.value.idleSince! }.map { ($0.key, $0.value) }
        }

        /// A connection of the address that holds the most, when it holds more than its fair share and `newcomer`
        /// holds less (the share: `maximum` over the addresses holding connections, the newcomer's included); nil
        /// otherwise. Never a trusted proxy's.
        func overShare(maximum: Int, newcomer: String) -> (address: String, id: ObjectIdentifier)? {
            let addresses = byAddress.count + (byAddress[newcomer] == nil ? 1 : 0)
            let share = max(1, maximum / max(1, addresses))
            guard (byAddress[newcomer]?.count ?? 0) < share,
                let (busiest, entries) = byAddress.filter({ $0.value.values.contains(where: \.limited) }).max(by: { $0.value.count < $1.value.count }
                ),
                busiest != newcomer, entries.count > share,
                let id = entries.first(where: { $0.value.limited })?.key
            else { return nil }
            return (busiest, id)
        }

        mutating func remove(_ id: ObjectIdentifier, of address: String) -> Entry? {
            guard let entry = byAddress[address]?.removeValue(forKey: id) else { return nil }
            if byAddress[address]!.isEmpty { byAddress[address] = nil }
            open -= 1
            return entry
        }
    }

    /// `onCount` hears the number of connections held after each change, under the lock, so the last count it
    /// hears is the current one.
    init(
        maximum: Int, perAddress: Int, onRefusal: @escaping @Sendable () -> Void = {}, onEviction: @escaping @Sendable () -> Void = {},
        onCount: @escaping @Sendable (Int) -> Void = { _ in }
    ) {
        self.maximum = maximum
        self.perAddress = perAddress
        self.onRefusal = onRefusal
        self.onEviction = onEviction
        self.onCount = onCount
    }

    /// A place for `channel` from `address`, made by closing an idle connection if a cap is reached; false when no
    /// place can be made. `limited` is false for a trusted proxy (global cap only).
    func admit(_ channel: any Channel, address: String, limited: Bool, now: NIODeadline = .now()) -> Bool {
        let outcome = state.withLockedValue { state -> (admitted: Bool, evicted: (any Channel)?) in
            var evicted: (any Channel)?
            if limited, let held = state.byAddress[address]?.count, held >= perAddress {
                guard let (id, _) = state.longestIdle(of: address) else { return (false, nil) }
                evicted = state.remove(id, of: address)?.channel
            } else if state.open >= maximum {
                // The addresses holding the most first; the first with an idle connection gives up its longest-idle one.
                var victim: (address: String, id: ObjectIdentifier)?
                for (candidate, _) in state.byAddress.map({ ($0.key, $0.value.count) }).sorted(by: { $0.1 > $1.1 }) {
                    if let (id, _) = state.longestIdle(of: candidate) {
                        victim = (candidate, id)
                        break
                    }
                }
                if victim == nil, limited { victim = state.overShare(maximum: maximum, newcomer: address) }
                guard let victim else { return (false, nil) }
                evicted = state.remove(victim.id, of: victim.address)?.channel
            }
            state.byAddress[address, default: [:]][ObjectIdentifier(channel)] = Entry(channel: channel, idleSince: now, limited: limited)
            state.open += 1
            onCount(state.open)
            return (true, evicted)
        }
        if let evicted = outcome.evicted {
            evicted.close(promise: nil)
            onEviction()
        }
        if !outcome.admitted { onRefusal() }
        return outcome.admitted
    }

    /// `channel` is gone (closed, or evicted already: then nothing changes).
    func leave(_ channel: any Channel, address: String) {
        state.withLockedValue { state in
            if state.remove(ObjectIdentifier(channel), of: address) != nil { onCount(state.open) }
        }
    }

    /// A request began (`idle` false) or its answer ended (`idle` true) on `channel`.
    func mark(_ channel: any Channel, address: String, idle: Bool, now: NIODeadline = .now()) {
        state.withLockedValue { state in
            let id = ObjectIdentifier(channel)
            guard state.byAddress[address]?[id] != nil else { return }
            state.byAddress[address]![id]!.idleSince = idle ? now : nil
        }
    }

    /// The handler that holds a place for its connection while the connection lives; `clients` names the address
    /// a connection counts against.
    func handler(clients: ClientAddressResolver) -> any RemovableChannelHandler { Place(cap: self, clients: clients) }

    final class Place: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        private let cap: ConnectionCap
        private let clients: ClientAddressResolver
        private var held: (channel: any Channel, address: String)?

        init(cap: ConnectionCap, clients: ClientAddressResolver) {
            self.cap = cap
            self.clients = clients
        }

        func handlerAdded(context: ChannelHandlerContext) {
            // Added when the connection is accepted: the peer is the TCP peer (a proxy's clients are not known yet).
            let peer = context.channel.remoteAddress?.ipAddress.flatMap(IPNetwork.init)
            let address = peer?.clientKey(ipv6PrefixLength: clients.ipv6PrefixLength) ?? ""
            let limited = peer.map { !clients.isTrustedProxy($0) } ?? false
            if cap.admit(context.channel, address: address, limited: limited) {
                held = (context.channel, address)
            } else {
                context.close(promise: nil)
            }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if let held, case .head = unwrapInboundIn(data) { cap.mark(held.channel, address: held.address, idle: false) }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if let held, case .end = unwrapOutboundIn(data) { cap.mark(held.channel, address: held.address, idle: true) }
            context.write(data, promise: promise)
        }

        func channelInactive(context: ChannelHandlerContext) {
            leave()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { leave() }

        private func leave() {
            if let held { cap.leave(held.channel, address: held.address) }
            held = nil
        }
    }
}
