import FIDOServerCore
import Hummingbird

/// Makes each request one unit of work on the database (`StoreDatabase.unitOfWork(_:)`): its answer waits once
/// for the commit of everything it read and wrote, instead of once per store call. Placed right after the
/// observation middleware, so a failed commit is counted and logged as the request's 500.
struct UnitOfWorkMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let database: StoreDatabase

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await database.unitOfWork { try await next(request, context) }
    }
}
