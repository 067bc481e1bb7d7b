import SiloCore
import SiloHTTP
import Synchronization

/// Routes requests for one list of route groups (``RouteGroup``, whose passes it runs in order): the same for the
/// worker's pipeline and every inline one, so a route's ``Route/group`` is a place in either's list.
final class Router: Sendable {
    let groups: [any RouteGroup.Type]
    let configuration: ServerConfiguration
    /// The groups that route by the head (``RouteGroup/routesByHead``), by place.
    private let byHead: [Int]
    /// Tells this router's answers apart from another's in the per-thread memo (``TargetMemo``): two servers in one
    /// process may route the same path to different groups.
    let id: Int

    private static let made = Atomic<Int>(0)

    init(_ groups: [any RouteGroup.Type], _ configuration: ServerConfiguration) {
        self.groups = groups
        self.configuration = configuration
        byHead = groups.indices.filter { groups[$0].routesByHead }
        id = Self.made.add(1, ordering: .relaxed).newValue
    }

    /// Why a request's target was refused, and by which group (nil: the kit's).
    struct Refusal: Error {
        let error: any Error
        let group: Int?
    }

    /// Where `head` goes: a group's route by its head, else by its path (through the memo), then made more precise
    /// by the rest of the request (``RouteTarget/refined(by:)``).
    func route(of head: HTTPRequestHead) throws(Refusal) -> Route {
        for index in byHead {
            let target: (any RouteTarget)?
            do { target = try groups[index].route(byHead: head, configuration) } catch {
                throw Refusal(error: error, group: index)
            }
            if let target { return Self.refined(Route(target, group: index), head) }
        }
        return Self.refined(try TargetMemo.route(head.rawPath, self), head)
    }

    private static func refined(_ route: Route, _ head: HTTPRequestHead) -> Route {
        guard let refined = route.target.refined(by: head) else { return route }
        return Route(refined, group: route.group)
    }

    /// The route by the path alone: each group's claim, the kit's own routes, then each group's catch-all.
    func route(path rawPath: String) throws(Refusal) -> Route {
        for index in groups.indices {
            do {
                if let target = try groups[index].route(path: rawPath) { return Route(target, group: index) }
            } catch { throw Refusal(error: error, group: index) }
        }
        if let own = KitRoute.parse(rawPath) { return Route(KitTarget(own), group: nil) }
        for index in groups.indices {
            do {
                if let target = try groups[index].route(unclaimedPath: rawPath) { return Route(target, group: index) }
            } catch { throw Refusal(error: error, group: index) }
        }
        return Route(KitTarget.unknown, group: nil)
    }

    /// The label of a request whose target was refused.
    func refusedLabel(_ refusal: Refusal, _ rawPath: String) -> RouteLabel {
        refusal.group.map { groups[$0].refusedLabel(rawPath) } ?? .invalid
    }
}
