// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @title SideToken (ST): the side-chain token with the ten functions of the platform.
/// @notice Only the bridge (the sandbox relayer) mints, when MT arrives at a swap address.
///         `redeem` burns the caller's ST and emits `Redeem`, which the relayer reads to pay
///         MT on the main chain. totalSupply = everything issued minus everything redeemed.
contract SideToken {
    string public name;
    string public symbol;
    uint8 public decimals;
    address public bridge;
    uint256 public issued;
    uint256 public redeemed;
    mapping(address => uint256) private balances;
    mapping(address => uint256) public stakedOf;
    mapping(address => mapping(address => uint256)) private allowances;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event Redeem(address indexed redeemer, uint256 amount);
    event Staked(address indexed owner, uint256 amount);
    event Unstaked(address indexed owner, uint256 amount);

    constructor(string memory _name, string memory _symbol, uint8 _decimals, address _bridge) {
        name = _name;
        symbol = _symbol;
        decimals = _decimals;
        bridge = _bridge;
    }

    /// Mints ST for a completed swap. Only the bridge may call it.
    function mint(address _to, uint256 _amount) external {
        require(msg.sender == bridge, "only the bridge mints");
        require(_to != address(0), "mint to the zero address");
        issued += _amount;
        balances[_to] += _amount;
        emit Transfer(address(0), _to, _amount);
    }

    function allowance(address _owner, address _spender) external view returns (uint256) {
        return allowances[_owner][_spender];
    }

    function approve(address _spender, uint256 _value) external returns (bool) {
        allowances[msg.sender][_spender] = _value;
        emit Approval(msg.sender, _spender, _value);
        return true;
    }

    function balanceOf(address _owner) external view returns (uint256) {
        return balances[_owner];
    }

    function transfer(address _to, uint256 _value) external returns (bool) {
        _move(msg.sender, _to, _value);
        return true;
    }

    function transferWithFee(address _to, uint256 _amount, address _feeCollector, uint256 _fee) external {
        uint256 feeAmount = (_amount * _fee) / 100;
        _move(msg.sender, _to, _amount);
        _move(msg.sender, _feeCollector, feeAmount);
    }

    function redeem(uint256 _amount) external {
        require(_amount > 0, "redeem of zero");
        require(balances[msg.sender] >= _amount, "balance too low");
        balances[msg.sender] -= _amount;
        redeemed += _amount;
        emit Transfer(msg.sender, address(0), _amount);
        emit Redeem(msg.sender, _amount);
    }

    function stake(uint256 _amount) external {
        require(balances[msg.sender] >= _amount, "balance too low");
        balances[msg.sender] -= _amount;
        stakedOf[msg.sender] += _amount;
        emit Staked(msg.sender, _amount);
    }

    function unstake(uint256 _amount) external {
        require(stakedOf[msg.sender] >= _amount, "staked balance too low");
        stakedOf[msg.sender] -= _amount;
        balances[msg.sender] += _amount;
        emit Unstaked(msg.sender, _amount);
    }

    function totalSupply() external view returns (uint256) {
        return issued - redeemed;
    }

    function transferFrom(address _from, address _to, uint256 _value) external returns (bool) {
        uint256 allowed = allowances[_from][msg.sender];
        require(allowed >= _value, "allowance too low");
        allowances[_from][msg.sender] = allowed - _value;
        _move(_from, _to, _value);
        return true;
    }

    function _move(address _from, address _to, uint256 _value) internal {
        require(_to != address(0), "transfer to the zero address");
        require(balances[_from] >= _value, "balance too low");
        balances[_from] -= _value;
        balances[_to] += _value;
        emit Transfer(_from, _to, _value);
    }
}
