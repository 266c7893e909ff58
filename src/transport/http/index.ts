/**
 * `fleetroute/http`: a ready transport for vLLM and SGLang workers over HTTP.
 *
 * @packageDocumentation
 */
export {};
