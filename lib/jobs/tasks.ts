// Domain modules register their due work and job handlers with the worker when imported.
export {};
