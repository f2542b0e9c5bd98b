import UAFSimulation

/// The facet the in-process tests' servers trust: the software authenticator's (the virtual device's).
let testFacet = SoftwareAuthenticator.virtualDeviceFacetID
